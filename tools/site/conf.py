# The course's static website, built by `make site` (tools/site/build.py stages the sources, then
# runs Sphinx with this configuration) into build/site/: open build/site/index.html, no server needed.
#
# Why Sphinx + myst-nb + sphinx-book-theme (the engine of Jupyter Book 1): myst-nb reads the .ipynb
# lessons natively, cell by cell, without running them; Sphinx's search index is a static file, so
# search works with no server and no network; MathJax 3 (3.2.2, with its fonts) comes from the
# sphinx-mathjax-offline package and is copied into _static/mathjax/, and the theme ships its
# scripts, styles and icon font and uses the system's fonts, so a page fetches nothing from the
# internet (tests/test_site.py and tests/browser/test_site_browser.py check it). Jupyter Book 2
# (mystmd) downloads its theme when it builds, which needs the network. MkDocs reads notebooks only
# through a plugin (mkdocs-jupyter), and its Material theme loads Google Fonts unless `font: false`.

project = "Encoder–Decoder Transformers, from NumPy to GPU"
author = "the course's authors"
copyright = "the course's authors"

extensions = ["myst_nb", "sphinx-mathjax-offline"]  # myst_nb brings myst_parser with it

# The released lessons, as they are: never executed, no outputs.
nb_execution_mode = "off"
nb_ipywidgets_js = {}  # the lessons' widgets need a kernel; no widget manager from a CDN

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "strikethrough", "tasklist"]
myst_heading_anchors = 4  # docs link to headings by their GitHub-style slugs: page.md#a-heading
myst_dmath_double_inline = True

source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["**/.ipynb_checkpoints"]
suppress_warnings = ["myst.strikethrough"]  # ~~x~~ is rendered for HTML, the only output built

html_theme = "sphinx_book_theme"
html_title = "Encoder–Decoder Transformers"
html_copy_source = False  # the notebooks are in the repository's course/; no copy of them here
html_show_sourcelink = False
html_last_updated_fmt = None
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": False,
    "use_fullscreen_button": True,
    "use_repository_button": False,
    "home_page_in_toc": True,
    "navigation_with_keys": False,
    "show_navbar_depth": 1,
    "secondary_sidebar_items": ["page-toc"],
    "article_header_end": ["toggle-secondary-sidebar"],
}
html_static_path = ["_static"]  # tools/site/_static
html_css_files = ["course.css"]
html_favicon = "_static/favicon.svg"  # else the browser asks the server for /favicon.ico
# Light unless the reader picks dark: the diagrams are drawn on white. (Without a default the theme
# logs an error on a first visit.)
html_context = {"default_mode": "light"}
