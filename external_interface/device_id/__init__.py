"""App device ids: one pool per site, filled by the site's registration step.

    devices = DevicePool(pools)
    devices.add("demo", "d5f0c2...")    # what the registration chain's step does
    lease = devices.lease("demo")       # a Lease (``value`` is the id) or Empty
    devices.retire("demo", lease.member)  # over its quota, or unknown to the site

An app API counts requests per device; a device over its budget is retired and
the task takes another. When the pool runs low the task launches the site's
registration chain (``providers.refill``).
"""

from __future__ import annotations

from external_interface.pool import Empty, Lease, PoolFactory, PoolStats, Verdict

KIND = "device"


class DevicePool:
    """Device id pools per site on one pool backend (Redis: shared by the cluster)."""

    def __init__(self, pools: PoolFactory) -> None:
        self._pools = pools

    def add(self, site: str, device_id: str) -> bool:
        """Add a registered device; False if it was known already. Atomic."""
        return self._pools(KIND, site).add({device_id: device_id}) == 1

    def lease(self, site: str) -> Lease | Empty:
        """The device rested longest, or ``Empty`` (then a registration is due). Atomic."""
        return self._pools(KIND, site).lease()

    def retire(self, site: str, device_id: str) -> None:
        """The site refused the device: it is never handed out again."""
        self._pools(KIND, site).report(device_id, Verdict.RETIRE)

    def stats(self, site: str) -> PoolStats:
        return self._pools(KIND, site).stats()
