"""Observation specs shared by the environments: the one flat vector observation."""

from __future__ import annotations

from mlagents_envs.base_env import DimensionProperty, ObservationSpec, ObservationType


def vector_observation_spec(size: int) -> ObservationSpec:
    """A flat vector observation of ``size`` floats, named ``"vector"`` (no visual dimensions).

    Args:
        size: the number of floats an agent observes.
    """
    return ObservationSpec(
        shape=(size,),
        dimension_property=(DimensionProperty.NONE,),
        observation_type=ObservationType.DEFAULT,
        name="vector",
    )
