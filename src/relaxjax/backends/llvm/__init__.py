"""relaxjax.backends.llvm"""
