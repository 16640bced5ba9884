"""relaxjax.trace"""
