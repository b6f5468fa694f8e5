"""Shell completion scripts generated from the command line's own argparse parser."""
