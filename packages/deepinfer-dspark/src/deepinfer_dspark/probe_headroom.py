# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""The probes' share of the time scaled by what drafting could still gain at a load.

`DraftCosts.probe_share` lets a losing load's probes lose up to 2% of its time, whatever drafting
could gain there if the load turned: a probe is bought as an option on that gain. Where the bounds'
best round gains little (`BoundPauses._bound_gain`: a full round with the measured acceptance's
upper bound, over plain decoding), the option is worth little, and a fixed share spends more on it
than it can return. On an H100 at 8 requests (session 81's eleven traced processes) the default's
probes lost 7-11 plain steps a drafted run with their transitions, where the bound read 1.0-1.4
(1.14-1.18 in one process); at 2 requests, where drafting won 1.15x, it read 0.98-1.87 (about
1.0-1.1 in four processes: so the scale also lengthens pauses there, which a GPU must weigh).
With `probe_headroom` h the share becomes `probe_share` times
min(1, max(`MIN_HEADROOM_SCALE`, (bound - 1) / h)), so the pause after a loss grows as the
headroom shrinks (an explore-in-proportion-to-the-stake rule, as a bandit's exploration bonus
shrinks with the arms' gap). Device-free.
"""

from __future__ import annotations

import math

MIN_HEADROOM_SCALE = 1.0 / 16.0   # the longest stretch: a pause 16x the share's (also `LONGEST_PROBE_PAUSE`)


def check_headroom(value: float) -> float:
    """`value` as a float if it is a finite number > 0 (a gain over plain decoding, e.g. 0.5 for
    1.5x), else ValueError naming `speculative_config.probe_headroom` (the factory reads 0 as off
    before it calls this)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError("speculative_config.probe_headroom: must be a finite number > 0 (the bounds' gain over "
                         f"plain decoding at which probes get the whole probe_share, e.g. 0.5) or 0 (off), "
                         f"got {value!r}")
    return float(value)


def headroom_scale(bound_gain: float, headroom: float) -> float:
    """The factor in [`MIN_HEADROOM_SCALE`, 1] on the probes' share at a load whose bounds' best
    round gains `bound_gain` over plain decoding (1.0: break-even): (bound_gain - 1) / `headroom`,
    clamped. A NaN gain reads as no headroom."""
    scale = (bound_gain - 1.0) / headroom
    if not math.isfinite(scale):
        return 1.0 if scale > 0 else MIN_HEADROOM_SCALE
    return min(1.0, max(MIN_HEADROOM_SCALE, scale))
