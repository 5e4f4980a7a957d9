"""The job API over HTTP and the web console on it (``python -m api``).

Built on FastAPI (Starlette and uvicorn beneath): a maintained ASGI framework whose
OpenAPI schema comes from the same pydantic models the project already speaks, whose
dependencies carry the token and cross-site checks for every route of a router at
once, and whose Jinja2 templates render the console on the server with no JavaScript
build step. It is an entry point, like ``monitor/``: it calls the crawl runtime
through one module (``api.runtime``) and nothing below imports it.

    api/app.py        the server: routers, error answers, security headers
    api/security.py   the token (bearer or session cookie), cross-site refusal
    api/jobs.py       launch, list, summary, pause/resume/cancel/retry, items
    api/workers.py    chains, steps, workers and queues, sites, health
    api/console.py    the console's pages and buttons (templates/, static/)
    api/runtime.py    every call into the runtime, in one place
    api/stream.py     an export streamed in bounded memory
    api/token.py      the token written into the cluster's env file
"""
