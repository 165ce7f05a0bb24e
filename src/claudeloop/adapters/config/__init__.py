"""Configuration: ./claudeloop.toml, the user's config.toml, CLAUDELOOP_* variables, and
backend profiles. Import the submodules (`loading`, `profiles`, `durations`): this
package stays empty so `claudeloop --help` never loads pydantic."""
