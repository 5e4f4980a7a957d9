"""The demo site: the sandbox's social news site (``python -m sandbox``).

Three platforms: ``h5`` (the mobile web: a signed JSON API, logged-in profile pages,
the login behind a captcha), ``app`` (article pages for registered devices) and
``common`` (the comment API). ``site.py`` declares what it takes to get through the
sandbox's defences; ``chains/demo.py`` links the steps.
"""
