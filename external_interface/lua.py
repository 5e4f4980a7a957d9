"""Lua shared by the Redis backends' scripts (politeness buckets, resource pools)."""

from __future__ import annotations

US = 1_000_000  # the scripts count time in microseconds

# ``clock(ARGV[1])``: the caller's time if given (tests pin it), else the server's, so
# every host of a cluster reads one clock. ``replicate_commands`` lets a script that
# reads TIME write afterwards (Redis < 7 refuses it otherwise).
CLOCK = r"""
redis.replicate_commands()
local function clock(given)
  if given ~= '' then return tonumber(given) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
"""
