"""The implementation of ``relaxjax.numpy``: one module of wrappers per op family."""
