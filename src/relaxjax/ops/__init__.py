"""relaxjax.ops"""
