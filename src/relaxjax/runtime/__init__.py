"""relaxjax.runtime"""
