"""relaxjax.backends.cuda"""
