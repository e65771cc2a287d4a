"""Review tools: compare the effective policies of two versions of the sheets, start new sheets.

:mod:`jobdef.review.sources` turns a folder or a git revision into a registry,
:mod:`jobdef.review.diff` compares two registries into structured changes (pure,
no I/O), :mod:`jobdef.review.render` writes those changes as text, Markdown or
JSON, and :mod:`jobdef.review.new_sheet` writes a commented starter sheet.
"""
