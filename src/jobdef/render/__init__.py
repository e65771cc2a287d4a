"""Rendering the effective policies for people: Markdown docs, TSV tables, explanations.

- :mod:`jobdef.render.describe`: every policy value in words (English, Japanese),
  the one place that decides how a value reads.
- :mod:`jobdef.render.escape`: Markdown and TSV cell escaping.
- :mod:`jobdef.render.labels`: the words of the pages themselves (headings).
- :mod:`jobdef.render.context`: what a job's templates receive.
- :mod:`jobdef.render.templates`: the Jinja2 environment over ``templates/``.
- :mod:`jobdef.render.docs`, :mod:`jobdef.render.tsv`, :mod:`jobdef.render.explain`:
  the outputs of ``jobdef docs``, ``jobdef tsv`` and ``jobdef explain``.
"""
