"""Judging a played run: what its results show and whether the app kept its promise.

- :mod:`.places`: where an app's results land, each checked by the Spark checker;
- :mod:`.pipeline`: a pipeline's services, each hop checked and the first wrong one named;
- :mod:`.symptoms`: the measurable signs of each incident, read from the run's evidence;
- :mod:`.held_back`: what kept inputs from the output at the deadline;
- :mod:`.judge`: the pass/fail rule over the verdict, the symptoms and the profile (with
  :mod:`.share_group_reason`, what a share group's archived inputs add to its reasons);
- :mod:`.played`: all of these applied to a played run, filling in its outcome;
- :mod:`.rejudge`: a stored run judged again from its history and recorded checks.

It may import reading a definition and the lower rooms (the checker, history, report's run
record), never the room that plays a run. Nothing is imported here.
"""
