"""Playing games between policies, and reading back the runs that trained them.

Below both ``ghost.running`` (scheduled evaluations during training) and ``ghost.evaluation``
(``ghost-eval``), which share it: the one match interface (``venue.Venue``, opened by
``venues.open_venue``) with its three implementations (``arena_venue``: a built-in game's
arenas; ``base_env_matches``: any BaseEnv; ``seated_matches``: OpenSpiel and PettingZoo games),
seating players in a built-in game (``matches``), counting the results of one policy against one
opponent (``head_to_head``), where those games are played
(``game_runner``: here or as Ray tasks), what the players of a run play at every information
state of an OpenSpiel game (``exploitability``), and a results folder read back
(``run_record.RunRecord``), whichever host trained it (``run_layouts``: ghost-learn,
mlagents-learn with our plugin, Stable-Baselines3, RLlib), with each host's policy files as
players (``host_policies``).
"""
