"""A job's cap on the units of one step (``Step.max_units``): a generic crawl's --max-pages.

    admitted = Quota(client).claim(job_id, "page", cap, [unit ids of the batch])

Exact, and not a counter: the job keeps the *set* of unit ids admitted so far
(``keys.job(job_id, "quota:<step>")``), and one Lua script per batch admits a unit
already in the set (a retry, a redelivery, a message that came back after its
worker died) and a new one only while the set holds fewer than ``cap``. So at most
``cap`` distinct units of the step are ever fetched in the job, whatever is retried
or delivered twice, and a unit admitted once is never refused later. A unit refused
ends skipped (``max-units``) without a fetch and spawns nothing, so the frontier
stops growing and the job finishes cleanly once what is in flight ends.
"""

from __future__ import annotations

import redis

from external_interface import keys

# KEYS: the admitted set. ARGV: cap, then unit ids. Reply: 1 (admitted) or 0, per unit.
_CLAIM = """
local cap, out = tonumber(ARGV[1]), {}
for i = 2, #ARGV do
  if redis.call('SISMEMBER', KEYS[1], ARGV[i]) == 1 then
    out[#out + 1] = 1
  elseif redis.call('SCARD', KEYS[1]) < cap then
    redis.call('SADD', KEYS[1], ARGV[i])
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
"""


class Quota:
    """Admissions per job and step, in the job's slot of the state Redis."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._claim = client.register_script(_CLAIM)

    def claim(self, job_id: str, step: str, cap: int, unit_ids: list[str]) -> list[bool]:
        """Per unit, in order: admitted (now or before) or refused. Atomic."""
        if not unit_ids:
            return []
        reply = self._claim(keys=[keys.job(job_id, f"quota:{step}")], args=[cap, *unit_ids])
        return [bool(int(flag)) for flag in reply]

    def admitted(self, job_id: str, step: str) -> int:
        """How many units of the step the job has admitted so far."""
        return int(self.client.scard(keys.job(job_id, f"quota:{step}")))
