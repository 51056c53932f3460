"""Every DAG's first task, ``check_params``: all the params checked before any work, one line per refusal.

Three kinds of rules, run in this order, the first refusal failing the task without retry (a retry
cannot fix a param) with one line that names the param:

* what the trigger form must not decide: the bounds of numbers, the emptied fields and durations
  (a param with ``DURATION_PATTERN`` is parsed as James does). The form's
  number input quietly moves a value outside ``minimum``/``maximum`` to the bound (``slices=-5``
  became 1), so ``form_params`` takes the bounds out of the form's schema and checks them here,
  where ``-5`` is refused, never changed. It also lets a field with a default be shown optional
  (``"null"`` in its type: the form marks a field required when its type has no ``"null"``); a
  field emptied anyway is refused here, unless its default is itself empty (``""``, ``[]``);
* combinations (``requires``, ``only_with`` or a DAG's own function raising ``ParamError``);
* the live system (``live.py``): the user, mailbox, queue, repository or group exists.

Everything downstream of ``check_params`` depends on it, so a refused run runs nothing else.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from airflow.sdk import Param, task
from airflow.sdk.definitions.xcom_arg import PlainXComArg
from airflow.sdk.exceptions import AirflowFailException

from mailserver.model.james_units import DURATION_PATTERN, InvalidDuration, parse_duration

log = logging.getLogger(__name__)

TASK_ID = "check_params"
BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
NUMBER_TYPES = ("integer", "number")
# Rule(params, lookups): raises ParamError. ``lookups`` is a ``live.Lookups`` (None for pure rules' tests).
Rule = Callable[[Mapping[str, Any], Any], None]
# dag_id -> (rules, live rules) of its check_params task, filled as DAG files are parsed: ``refusal``.
CHECKS: dict[str, tuple[tuple[Rule, ...], tuple[Rule, ...]]] = {}


class ParamError(ValueError):
    """A refused param: ``str()`` is the one line an operator reads."""

    def __init__(self, param: str, problem: str) -> None:
        self.param = param
        super().__init__(f"param {param}: {problem}")


def _types(schema: Mapping[str, Any]) -> list[str]:
    kind = schema.get("type")
    return list(kind) if isinstance(kind, list | tuple) else [kind] if kind else []


def in_bounds(name: str, bounds: Mapping[str, float]) -> Rule:
    """The JSON-schema bounds of a number, checked on the run's value (empty is another rule's business)."""
    def rule(params: Mapping[str, Any], _lookups: Any) -> None:
        value = params.get(name)
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ParamError(name, f"{value!r} is not a number")
        if "minimum" in bounds and value < bounds["minimum"]:
            raise ParamError(name, f"{value} is below the minimum of {bounds['minimum']}")
        if "exclusiveMinimum" in bounds and value <= bounds["exclusiveMinimum"]:
            raise ParamError(name, f"{value} must be greater than {bounds['exclusiveMinimum']}")
        if "maximum" in bounds and value > bounds["maximum"]:
            raise ParamError(name, f"{value} is above the maximum of {bounds['maximum']}")
        if "exclusiveMaximum" in bounds and value >= bounds["exclusiveMaximum"]:
            raise ParamError(name, f"{value} must be less than {bounds['exclusiveMaximum']}")
    return rule


def is_duration(name: str) -> Rule:
    """James's duration, checked whole: the form's ``DURATION_PATTERN`` cannot bound the amount (an
    ``int`` in James), and the job would refuse it only once the run is under way."""
    def rule(params: Mapping[str, Any], _lookups: Any) -> None:
        value = params.get(name)
        if value in (None, ""):
            return
        try:
            parse_duration(str(value))
        except InvalidDuration as exc:
            raise ParamError(name, str(exc)) from None
    return rule


def not_emptied(name: str, default: Any) -> Rule:
    def rule(params: Mapping[str, Any], _lookups: Any) -> None:
        if params.get(name) is None:
            raise ParamError(name, f"empty; give a value (the default is {default!r})")
    return rule


def requires(name: str, needed: str, when: Callable[[Any], bool] = bool, what: str = "") -> Rule:
    """``needed`` must be given when ``when(params[name])``: ``scope=group`` without a group."""
    def rule(params: Mapping[str, Any], _lookups: Any) -> None:
        value = params.get(name)
        if when(value) and params.get(needed) in (None, "", []):
            raise ParamError(needed, f"missing: {name}={value!r} needs it{what}")
    return rule


def only_with(name: str, companion: str, when: Callable[[Any], bool] = bool) -> Rule:
    """``name`` given alone means nothing: it needs ``companion`` (a uid without its mailbox)."""
    def rule(params: Mapping[str, Any], _lookups: Any) -> None:
        if params.get(name) not in (None, "", []) and not when(params.get(companion)):
            raise ParamError(name, f"only with {companion}, which is not given")
    return rule


def from_value_error(check: Callable[[Mapping[str, Any]], None]) -> Rule:
    """A DAG's own combination check that raises ``ValueError`` (its message names the params)."""
    def rule(params: Mapping[str, Any], _lookups: Any) -> None:
        try:
            check(params)
        except ParamError:
            raise
        except ValueError as exc:
            raise ParamError(getattr(exc, "param", "combination"), str(exc)) from None
    return rule


def form_params(params: Mapping[str, Param]) -> tuple[dict[str, Param], list[Rule]]:
    """The params as the trigger form gets them, and the rules that take over what was taken out."""
    shown: dict[str, Param] = {}
    rules: list[Rule] = []
    for name, param in params.items():
        schema = dict(param.schema)
        types = _types(schema)
        bounds = {key: schema.pop(key) for key in BOUNDS if key in schema and set(types) & set(NUMBER_TYPES)}
        default = param.value
        if default is not None and "null" not in types and "enum" not in schema and types:
            schema["type"] = ["null", *types]
            if default not in ("", []):   # emptying an empty default changes nothing
                rules.append(not_emptied(name, default))
        if bounds:
            rules.append(in_bounds(name, bounds))
        if schema.get("pattern") == DURATION_PATTERN:
            rules.append(is_duration(name))
        shown[name] = Param(default, description=param.description, **schema)
    return shown, rules


def run_checks(params: Mapping[str, Any], rules: Sequence[Rule], live: Sequence[Rule] = (),
               lookups: Any = None) -> None:
    """Pure rules first, then (all pure rules passed) the live ones; raises the first ``ParamError``."""
    for rule in rules:
        rule(params, lookups)
    for rule in live:
        rule(params, lookups)


def check_params_task(rules: Sequence[Rule], live: Sequence[Rule] = ()) -> Any:
    """The ``check_params`` task of a DAG (call it inside the DAG's ``with`` block)."""
    @task(task_id=TASK_ID)
    def check_params(**context: Any) -> dict[str, Any]:
        from mailplatform.live import Lookups

        params = context["params"]
        with Lookups() as lookups:
            try:
                run_checks(params, rules, live, lookups)
            except ParamError as exc:
                from mailplatform.job_outcome import REFUSAL_KEY

                log.error("%s", exc)
                # the report leaf repeats it, so a refused run is red and says why where it ends
                context["ti"].xcom_push(key=REFUSAL_KEY, value=str(exc))
                raise AirflowFailException(str(exc)) from None
        log.info("params checked: %s", {k: params[k] for k in sorted(params)})
        return {"checked": sorted(params)}

    checked = check_params()
    assert isinstance(checked, PlainXComArg)   # a @task call's result: one operator's return value
    CHECKS[checked.operator.dag_id] = (tuple(rules), tuple(live))
    return checked


def refusal(dag: Any, conf: Mapping[str, Any], lookups: Any = None) -> str | None:
    """Why a run of ``dag`` with ``conf`` is refused: by the trigger form's schema (Airflow's error) or
    by its ``check_params`` task (``param <name>: ...``; its live rules only with ``lookups``). None: accepted."""
    from airflow.sdk.exceptions import ParamValidationError

    merged = copy.deepcopy(dag.params)
    try:
        merged.update(dict(conf))   # validates each given value against its schema, as a trigger does
        params = merged.validate()
    except ParamValidationError as exc:
        return str(exc)
    rules, live = CHECKS[dag.dag_id]
    try:
        run_checks(params, rules, live if lookups is not None else (), lookups)
    except ParamError as exc:
        return str(exc)
    return None
