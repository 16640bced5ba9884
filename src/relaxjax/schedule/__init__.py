"""relaxjax.schedule"""
