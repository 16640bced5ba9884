"""The implementation of ``relaxjax.nn``: activations and norms, attention."""
