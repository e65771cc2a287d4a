"""Where jobdef meets a framework: each subpackage plugs the sheets into one."""
