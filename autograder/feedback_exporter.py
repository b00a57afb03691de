"""The feedback page as a whole: nbgrader's feedback template, made to read offline and to name
things. nbgrader_config.py makes FeedbackExporter GenerateFeedback's exporter, so `make autograde`
and `nbgrader generate_feedback` write the same pages.

- formulas are rendered to MathML when the page is built (browsers draw MathML without any script),
  and the MathJax that nbgrader's template loads from the internet is left out;
- the table of contents names each exercise ("Exercise 1.2 scaled_dot_product_attention"), from the
  checkers' records, instead of "Test cell";
- every line wraps, the "Likely cause" lines included;
- the lesson's diagrams (`../figures/*.svg`, which are not beside a feedback page) are embedded in it.
"""

import base64
import functools
import json
import re
from html import escape
from pathlib import Path

import jinja2
import nbformat
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbconvert.filters.highlight import Highlight2HTML

from . import records

FIGURES = Path(__file__).resolve().parent.parent / "course" / "figures"
FIGURE_LINK = re.compile(r"\]\(\.\./figures/([\w.-]+\.svg)\)")
MATH = re.compile(r"\$\$(.+?)\$\$|(?<![\\$])\$(?!\$)(.+?)(?<![\\$])\$", re.S)
# MathJax from a CDN, and its configuration: dead weight once the formulas are MathML
CDN_MATHJAX = re.compile(r'<script src="https?://[^"]*mathjax[^"]*">\s*</script>'
                         r'|<script type="text/x-mathjax-config">.*?</script>', re.I | re.S)
WRAP_CSS = """<style>
/* the course's feedback: every line wraps, nothing hides past the right edge */
.encdec-check, .encdec-check p, .encdec-check td { white-space: normal; overflow-wrap: anywhere; }
.encdec-check table { table-layout: auto; max-width: 100%; }
div.output_area pre, div.output_subarea, div.output_text pre { white-space: pre-wrap; overflow-wrap: anywhere; }
math[display="block"] { display: block; margin: .6em 0; overflow-x: auto; }
</style>
"""


@functools.lru_cache(maxsize=8192)
def _mathml(tex, display):
    """One formula as MathML (remembered: a lesson's formulas are the same in every submission, and
    the grader's warmed process server (warm.py) has converted them once for all its jobs)."""
    from latex2mathml.converter import convert
    return convert(tex, display=display)


def math_to_mathml(text):
    """Markdown with each $…$ and $$…$$ rendered as MathML, which browsers draw without any script
    or network; a formula the converter cannot read stays as its TeX source, in code. Without
    latex2mathml (requirements.txt) the text is returned as it is."""
    try:
        import latex2mathml.converter  # noqa: F401
    except ImportError:
        return text

    def one(m):
        tex, block = (m.group(1), True) if m.group(1) is not None else (m.group(2), False)
        try:
            return _mathml(tex.strip(), "block" if block else "inline")
        except Exception:  # an unknown command: show the source rather than break the page
            return f"<code>{escape(m.group(0))}</code>"
    return MATH.sub(one, text)


def embed_figures(text, folder=FIGURES):
    """Markdown whose links to ../figures/NAME.svg carry the figure itself (a data URI), so that the
    page shows it wherever it is opened; a figure that is not there keeps its link."""
    def one(m):
        path = folder / m.group(1)
        if not path.is_file():
            return m.group(0)
        return f"](data:image/svg+xml;base64,{base64.b64encode(path.read_bytes()).decode()})"
    return FIGURE_LINK.sub(one, text)


def exercise_names(nb):
    """{grade_id: 'Exercise 1.2 scaled_dot_product_attention'} from the checkers' records."""
    names = {}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade"):
            record = records.cell_record(cell)
            if record is not None:
                names[meta["grade_id"]] = f"Exercise {record.heading}"
    return names


class _CompiledTemplates(jinja2.BytecodeCache):
    """The templates' compiled code, kept in memory by source checksum: compiled once in the grader's
    process server (warm.py), then reused by every job forked from it."""

    def __init__(self):
        self.store = {}

    def load_bytecode(self, bucket):
        if bucket.key in self.store and bucket.checksum == self.store[bucket.key][0]:
            bucket.bytecode_from_string(self.store[bucket.key][1])

    def dump_bytecode(self, bucket):
        self.store[bucket.key] = (bucket.checksum, bucket.bytecode_to_string())


COMPILED = _CompiledTemplates()


_RENDERED = {}  # (what a cell's HTML depends on) -> its HTML: a lesson's own cells are the same in every submission


def _remembered(key, make):
    if key not in _RENDERED:
        if len(_RENDERED) > 20000:
            _RENDERED.clear()
        _RENDERED[key] = make()
    return _RENDERED[key]


class _Highlight:
    """nbconvert's code highlighter, remembering each cell's HTML (the same input gives the same HTML)."""

    def __init__(self, highlight):
        self.highlight = highlight

    def __call__(self, source, language=None, metadata=None):
        key = ("code", source, language, json.dumps(metadata, sort_keys=True, default=str), self.highlight.pygments_lexer)
        return _remembered(key, lambda: self.highlight(source, language=language, metadata=metadata))


class FeedbackExporter(HTMLExporter):
    """nbgrader's feedback page with formulas as MathML, the exercises named and text that wraps.
    What it makes once it keeps in memory (compiled templates, each Markdown or code cell's HTML,
    each formula's MathML): the grader's process server makes them for the run's lessons (warm.py),
    and every job forked from it finds the lesson's own cells done."""

    def _create_environment(self):
        environment = super()._create_environment()
        environment.bytecode_cache = COMPILED
        return environment

    @jinja2.pass_context
    def markdown2html(self, context, source):
        cell = context.get("cell", {})
        path = context.get("resources", {}).get("metadata", {}).get("path", "") if self.embed_images else ""
        key = ("markdown", source, json.dumps(cell.get("attachments", {}), sort_keys=True), path, self.embed_images,
               self.anchor_link_text, self.exclude_anchor_links, repr(self.lexer_options))
        return _remembered(key, lambda: super(FeedbackExporter, self).markdown2html(context, source))

    def register_filter(self, name, jinja_filter):
        if name == "highlight_code" and isinstance(jinja_filter, Highlight2HTML):
            jinja_filter = _Highlight(jinja_filter)
        return super().register_filter(name, jinja_filter)

    def from_notebook_node(self, nb, resources=None, **kw):
        nb = nbformat.from_dict(nb)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source = embed_figures(math_to_mathml(cell.source))
        html, resources = self._page(nb, resources, **kw)
        html = CDN_MATHJAX.sub("", html)
        for grade_id, name in exercise_names(nb).items():
            html = html.replace(f'<a href="#{grade_id}">Test cell</a>', f'<a href="#{grade_id}">{escape(name)}</a>')
        return html.replace("</head>", WRAP_CSS + "</head>", 1), resources

    def _page(self, nb, resources=None, **kw):
        """HTMLExporter.from_notebook_node (nbconvert 7.17) without its last pass, which parses the whole page
        with BeautifulSoup's pure-Python parser to give images without alt text one and cells a tabindex
        (a third of the page's time, for a few attributes): the same attributes, written into the markup."""
        langinfo = nb.metadata.get("language_info", {})
        lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
        self.register_filter("highlight_code", self.filters.get("highlight_code", Highlight2HTML(pygments_lexer=lexer,
                                                                                                 parent=self)))
        resources = self._init_resources(resources)
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self,
                                                                       resources=resources))
        html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return accessible(html), resources


_NO_ALT = re.compile(r"<img(?![^>]*\balt=)")
_FOCUSABLE = re.compile(r'(<div class="(?:jp-Cell-inputWrapper|[^"]*\bjp-OutputArea-output\b[^"]*)")(?![^>]*tabindex)')


def accessible(html):
    """What nbconvert's HTMLExporter adds to a page, as markup: alt text for an image that has none, and a
    tabindex on each cell's input and each output, so that a keyboard reaches them."""
    html = _NO_ALT.sub('<img alt="No description has been provided for this image"', html)
    if 'class="jp-Notebook' not in html:  # nbconvert adds the tabindex inside a .jp-Notebook only (lab's pages)
        return html
    return _FOCUSABLE.sub(r'\1 tabindex="0"', html)
