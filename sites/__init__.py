"""One package per site: ``sites/<site>/``, its steps named ``<site>.<platform>.<step>``.

A site's steps are ``@step`` functions in any of its modules (one file for a small
site, one per platform for a bigger one); its ``SITE = Site(...)`` declaration, in any
module, gives its settings, politeness, providers and hooks. ``chains/<site>.py``
links the steps into chains. ``chains.runtime.registry`` finds all of it: nothing to
list by hand.
"""
