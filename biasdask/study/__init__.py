"""A study, above the measures: what to compute, in what order, and where it goes.

:mod:`~biasdask.study.config` reads the study file, :mod:`~biasdask.study.plan` decides what each
language still needs, :mod:`~biasdask.study.run` runs it into the results cube,
:mod:`~biasdask.study.inference` corrects and pools the finished cube, and
:mod:`~biasdask.study.reliability` asks whether its scoring rules and tests agree.
"""

__all__ = []
