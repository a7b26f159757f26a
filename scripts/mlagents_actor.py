"""Unity ML-Agents 1.1 policies from their checkpoints: ``MLAgentsActor`` lives in the library
(``ghost.play.mlagents_actor``), where ``ghost-eval`` plays runs of the mlagents-learn plugin with
it; this name stays for the scripts and tests that import it from here."""

from ghost.play.mlagents_actor import MLAgentsActor

__all__ = ["MLAgentsActor"]
