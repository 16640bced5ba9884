"""The implementation of ``relaxjax.lax``: control flow (``control``) and windows at
run-time offsets (``slicing``)."""
