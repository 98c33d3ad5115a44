"""The data provider: which files exist under a logdir (:mod:`.runs`), loading them (:mod:`.loader`,
:mod:`.parse`, :mod:`.cache`), keeping them in memory (:mod:`.budget`, :mod:`.views`), memory
artifacts (:mod:`.artifacts`), per-rank work (:mod:`.executors`, :mod:`.distributed`) and the one
builder of report documents (:mod:`.report`). Several logdirs: :mod:`.multi`."""
