"""Structuring ``self_play.sampling``: one flat section, the strategy's own keys among the shared.

``strategy`` picks the opponent sampler (``ghost.core.sampling``); the section holds the keys every
strategy shares (``COMMON_KEYS``) beside the keys of that strategy's own options class. A key of
another strategy is refused with the fix (``write `strategy: pfsp` to use it``), except where it
holds that strategy's default: a run's ``configuration.yaml`` written before each strategy
declared its own keys records them all.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

import attrs

from envs.exceptions import did_you_mean
from ghost.config.config_problem import ConfigProblem
from ghost.config.structure_values import (
    construct,
    converter,
    fields_of,
    structure_field,
    unstructure_attrs,
)
from ghost.core.sampling import (
    COMMON_KEYS,
    DEFAULT_STRATEGY,
    SamplingSettings,
    sampler_class,
    sampler_names,
    samplers,
)


def _structure_sampling(value: Any, _: type) -> SamplingSettings:
    """``self_play.sampling``: ``strategy``, ``win_rate_window`` and the keys of the strategy's
    own options class, all in one flat section (``ghost.core.sampling``)."""
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise ConfigProblem(
            "expected a section of sampling keys (strategy, win_rate_window and the strategy's "
            "own)",
            value=value,
        )
    fields = fields_of(SamplingSettings)
    strategy = DEFAULT_STRATEGY
    if "strategy" in value:
        try:
            strategy = structure_field(value["strategy"], fields["strategy"])
        except ConfigProblem as problem:
            raise problem.below("strategy") from None
    sampler = sampler_class(strategy)
    if sampler is None:
        raise ConfigProblem(
            f"unknown opponent sampling strategy; valid strategies: {', '.join(sampler_names())}",
            value=strategy,
        ).below("strategy")
    own = fields_of(sampler.options_class)
    common: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for key, item in value.items():
        if key in COMMON_KEYS:
            target, field = common, fields[key]
        elif key in own:
            target, field = options, own[key]
        elif _is_unused_default(key, item, strategy):
            continue
        else:
            raise _misplaced_sampling_key(key, item, strategy, own)
        try:
            target[key] = structure_field(item, field)
        except ConfigProblem as problem:
            raise problem.below(key) from None
    made = construct(sampler.options_class, options)
    return construct(SamplingSettings, {**common, "options": made})


def _field_default(field: attrs.Attribute) -> Any:
    default: Any = field.default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        default = default.factory()
    return default


def _is_unused_default(key: str, item: Any, strategy: str) -> bool:
    """Whether ``key`` is another strategy's key holding that strategy's default. A configuration
    written before each strategy declared its own keys (a run's ``configuration.yaml``) records
    every built-in key, whatever the strategy; at its default such a key changes nothing."""
    for name, sampler in samplers().items():
        field = fields_of(sampler.options_class).get(key)
        if name == strategy or field is None:
            continue
        try:
            if structure_field(item, field) == _field_default(field):
                return True
        except ConfigProblem:
            continue
    return False


def _misplaced_sampling_key(
    key: str, item: Any, strategy: str, own: Mapping[str, Any]
) -> ConfigProblem:
    """A key of another strategy (named, with the fix), or an unknown key."""
    keys_of = {name: fields_of(s.options_class) for name, s in samplers().items()}
    owners = sorted(name for name, keys in keys_of.items() if key in keys)
    if owners:
        return ConfigProblem(
            f"a key of strategy {' / '.join(owners)}, while this section's strategy is "
            f"{strategy}; write `strategy: {owners[0]}` to use it, or remove the key",
            value=item,
        ).below(key)
    valid = [COMMON_KEYS[0], *own, *COMMON_KEYS[1:]]
    hint = did_you_mean(key, valid, cutoff=0.5)
    if not hint:  # a misspelt key of another strategy
        elsewhere = {name: strategy for strategy, keys in keys_of.items() for name in keys}
        close = difflib.get_close_matches(key, list(elsewhere), n=1, cutoff=0.5)
        if close:
            hint = f"did you mean {close[0]!r} (a key of strategy {elsewhere[close[0]]})?"
    hint = f"{hint} " if hint else ""
    return ConfigProblem(
        f"unknown key; {hint}valid keys with strategy {strategy}: {', '.join(valid)}", value=item
    ).below(key)


def _unstructure_sampling(sampling: SamplingSettings) -> dict[str, Any]:
    """Flat, as written: ``strategy``, the strategy's own keys, ``win_rate_window``."""
    return {
        "strategy": sampling.strategy,
        **unstructure_attrs(sampling.options),
        "win_rate_window": sampling.win_rate_window,
    }


converter.register_structure_hook(SamplingSettings, _structure_sampling)
converter.register_unstructure_hook(SamplingSettings, _unstructure_sampling)
