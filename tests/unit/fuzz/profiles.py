"""Example budgets of the fuzzers: a fixed, repeatable one for ``make test``, a long one for ``make fuzz``.

``HYPOTHESIS_PROFILE`` picks the profile (``fuzz-ci`` when unset):

* ``fuzz-ci``: each fuzzer runs its own small number of examples, derandomized (the same inputs on
  every run, so a red test is a change in the code, never bad luck) and without the example
  database (nothing left over from a long run changes what ``make test`` checks);
* ``fuzz`` (``make fuzz``): 20 times more examples (the ``FUZZ_FACTOR`` variable changes the factor),
  random, and every failing input saved under ``.hypothesis/`` and replayed first on the next run
  until it passes.

No profile has a deadline: how long an example takes depends on the machine; the bounds the
fuzzers check (depth, size, replies) hold by construction, whatever the clock says.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

PROFILE_VARIABLE, FACTOR_VARIABLE = "HYPOTHESIS_PROFILE", "FUZZ_FACTOR"
CI, FUZZ = "fuzz-ci", "fuzz"
DEFAULT_FUZZ_FACTOR = 20

# Without the explain phase: re-running a failure with its parts varied takes minutes on a slow walker;
# the shrunk failing example is printed all the same.
settings.register_profile(CI, deadline=None, derandomize=True, database=None, print_blob=False,
                          phases=[Phase.explicit, Phase.generate, Phase.shrink],
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(FUZZ, deadline=None, derandomize=False, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def profile_name() -> str:
    name = os.environ.get(PROFILE_VARIABLE) or CI
    if name not in (CI, FUZZ):
        raise ValueError(f"{PROFILE_VARIABLE}={name!r}: the fuzzers know the profiles {CI!r} and {FUZZ!r}")
    return name


def budget(examples: int) -> settings:
    """The settings of a fuzzer that runs ``examples`` examples in ``make test``."""
    name = profile_name()
    scale = int(os.environ.get(FACTOR_VARIABLE) or DEFAULT_FUZZ_FACTOR) if name == FUZZ else 1
    return settings(settings.get_profile(name), max_examples=examples * scale)
