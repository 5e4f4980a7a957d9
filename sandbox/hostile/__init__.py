"""The hostile index page: links to endpoints that hang, drip, bomb, loop, lie and redirect to
private addresses, with a few good pages among them (``site``; ``python -m sandbox.hostile``).
"""
