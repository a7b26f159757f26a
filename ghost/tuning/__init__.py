"""``ghost-tune``: hyperparameter search over trainer and self-play settings, with Optuna.

Vocabulary:

- a **study** is one search: a base config, a search space, a yardstick and a budget
  (``settings.TuneSettings``), kept with its trials in an Optuna storage;
- a **trial** trains the base config with one set of values drawn from the space, once per seed,
  and is judged by the mean of its runs (``objective.Objective``);
- a **key path** names a config key (``hyperparameters.learning_rate``); the **search space** maps
  key paths to ranges or choices (``space``; the built-in one per game kind in ``defaults``);
- the **yardstick** is the one number every trial is judged by: exact exploitability, the score
  against a scripted level, or an exploiter's score (``yardsticks``);
- **pruning** stops a trial whose yardstick, reported at evaluations during training, is worse
  than the median of earlier trials at the same step.

``study`` runs the trials (in worker processes sharing the storage), ``report`` writes the table,
the parameter importance and ``best.yaml``, ``cli`` is the command. Optuna is an optional extra
(``pip install ghost-trainer[tune]``); nothing outside this package imports it.
"""

#: the command's name, in its messages
PROG = "ghost-tune"
