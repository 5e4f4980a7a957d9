"""``python -m api [--host H] [--port P]``: the job API and the console, on uvicorn.

``./control.sh start api`` runs this after writing a token into the cluster's env file
(``python -m api.token ensure``). Host and port default to ``API_HOST`` (127.0.0.1) and
``API_PORT`` (8780); port 0 takes any free port, and the first log line says which.
"""

from __future__ import annotations

import argparse
import logging
import socket
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from config import ApiSettings

log = logging.getLogger("api")


def main(argv: list[str] | None = None) -> int:
    import uvicorn
    from redis import RedisError

    from api.app import create_app
    from api.runtime import Cluster
    from api.security import Keys
    from config import ApiSettings, cluster_env_file, get_settings, read
    from utils.logs import configure
    from utils.urls import redact_text

    try:
        configure()
        settings = read(ApiSettings, cluster_env_file())
        args = _parser(settings).parse_args(argv)
        keys = Keys(settings.token, frozenset(settings.allowed_origins))
        cluster = Cluster.current(settings.inspect_timeout_s)
        listener = socket.create_server((args.host, args.port))
    except RedisError as exc:
        url = redact_text(get_settings().state.redis_url)
        print(f"api: the state Redis at {url} does not answer ({exc}): start it (./control.sh "
              "start redis) or point STATE_REDIS_URL at the cluster's", file=sys.stderr)
        return 2
    except (ValueError, OSError) as exc:  # a setting, or the address is taken
        print(f"api: {redact_text(str(exc))}", file=sys.stderr)
        return 2
    host, port = listener.getsockname()[:2]
    app = create_app(cluster, keys)
    log.info("api: serving on http://%s:%d/api (console: http://%s:%d/console/)",
             host, port, host, port)
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=True,
                                           proxy_headers=False))
    server.run(sockets=[listener])
    return 0


def _parser(settings: ApiSettings) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m api", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default=settings.host,
                        help="address to bind (default API_HOST, 127.0.0.1)")
    parser.add_argument("--port", type=int, default=settings.port,
                        help="port to bind (default API_PORT, 8780; 0: any free one)")
    return parser


if __name__ == "__main__":
    sys.exit(main())
