"""relaxjax.backends"""
