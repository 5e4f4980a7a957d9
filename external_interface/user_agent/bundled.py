"""The bundled user agents per family: the agents of ``browsers.py``, nothing fetched.

Refreshed with the header sets (``python -m external_interface.user_agent.refresh``),
or kept in Redis for the whole cluster (``RESOURCES_USER_AGENTS=redis``) and
replaced there. Families: ``mobile`` (phone browsers, for h5 sites) and ``desktop``
(for pc sites); an app's own agent is declared by its site
(``SiteProviders.user_agents``).
"""

from __future__ import annotations

from external_interface.user_agent.browsers import HEADER_SETS

AGENTS: dict[str, tuple[str, ...]] = {
    family: tuple(agent for agent, _, _ in sets) for family, sets in HEADER_SETS.items()
}
