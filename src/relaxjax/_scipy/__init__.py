"""The implementation of :mod:`relaxjax.scipy` (private: import the public modules)."""
