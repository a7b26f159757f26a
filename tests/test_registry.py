"""Trainer types from entry points: loading, broken plugins, unknown types."""

from __future__ import annotations

import logging
from importlib import metadata

import attrs
import pytest

from ghost.exceptions import TrainerTypeError
from tests.conftest import FakeEntryPoint, FakeTrainer, builtin_types
from trainers import registry
from trainers.hyperparameters import POCASettings, PPOSettings, SACSettings
from trainers.poca import POCATrainer
from trainers.settings import HyperparamSettings


@attrs.frozen(kw_only=True)
class MyHyperparams(HyperparamSettings):
    depth: int = 3


class MyTrainer:
    pass


def my_types():
    return {"mine": MyTrainer}, {"mine": MyHyperparams}


def broken_plugin():
    raise ImportError("No module named 'missing_dependency'")


def test_project_declares_its_builtin_entry_point():
    names = {ep.name: ep.value for ep in metadata.entry_points(group=registry.ENTRY_POINT_GROUP)}
    assert names.get("builtin") == "trainers.registry:builtin_trainer_types"


def test_plugins_are_loaded(use_entry_points):
    use_entry_points(FakeEntryPoint("builtin", builtin_types), FakeEntryPoint("mine", my_types))
    assert registry.trainer_types() == ("mine", "poca", "ppo", "sac")
    assert registry.hyperparameter_class("mine") is MyHyperparams
    assert registry.trainer_class("mine") is MyTrainer
    assert registry.trainer_class("ppo") is FakeTrainer
    assert registry.hyperparameter_class("sac") is SACSettings


def test_failing_plugin_is_reported_and_skipped(use_entry_points, caplog):
    use_entry_points(
        FakeEntryPoint("builtin", builtin_types),
        FakeEntryPoint("broken", broken_plugin),
        FakeEntryPoint("mine", my_types),
    )
    with caplog.at_level(logging.WARNING, logger="trainers.registry"):
        assert registry.trainer_types() == ("mine", "poca", "ppo", "sac")
    assert "'broken'" in caplog.text
    assert "ImportError: No module named 'missing_dependency'" in caplog.text


def test_plugin_returning_the_wrong_shape_is_skipped(use_entry_points, caplog):
    use_entry_points(FakeEntryPoint("odd", lambda: {"x": MyTrainer}))
    with caplog.at_level(logging.WARNING, logger="trainers.registry"):
        assert "x" not in registry.trainer_types()
    assert "'odd'" in caplog.text and "expected (" in caplog.text


def test_builtin_hyperparameters_survive_a_broken_builtin_plugin(use_entry_points):
    use_entry_points(FakeEntryPoint("builtin", broken_plugin))
    assert registry.hyperparameter_class("ppo") is PPOSettings
    with pytest.raises(TrainerTypeError) as caught:
        registry.trainer_class("ppo")
    assert "builtin: ImportError" in str(caught.value)


def test_unknown_type_lists_the_registered_ones(fake_registry):
    for lookup in (registry.hyperparameter_class, registry.trainer_class):
        with pytest.raises(TrainerTypeError) as caught:
            lookup("sacc")
        assert "Registered types: poca, ppo, sac" in str(caught.value)
        assert "Did you mean 'sac'?" in str(caught.value)


def test_poca_is_built_in():
    registry.refresh()
    assert registry.hyperparameter_class("poca") is POCASettings
    assert registry.trainer_class("poca") is POCATrainer


def test_refresh_reloads_entry_points(use_entry_points):
    use_entry_points(FakeEntryPoint("builtin", builtin_types))
    assert "mine" not in registry.trainer_types()
    use_entry_points(FakeEntryPoint("builtin", builtin_types), FakeEntryPoint("mine", my_types))
    assert "mine" in registry.trainer_types()
