"""relaxjax: compile numerical Python once for every value of its symbolic dimensions."""
