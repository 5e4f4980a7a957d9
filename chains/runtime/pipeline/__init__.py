"""One batch of units through the phases: prepare -> fetch -> parse -> save -> spawn -> close.

Each phase is a function from the batch's runs to the next runs, in a module named
for it; ``prepare`` also defines the values they pass on (``UnitRun``, the closed
``Fate`` type). ``chains.runtime.message`` calls them in order for each page of a
message.
"""
