"""Chains are data: steps by task name, fan-out links with field mappings.

One file of chains per site (``chains/demo.py``); ``chains.model`` holds the model
and ``chains.engine`` turns parse results into messages.
"""
