package report

import (
	"fmt"
	"io"
	"strings"
)

// Page is a whole report: a title, a few lines of facts about the run
// (Meta, name and value), and its sections in order.
type Page struct {
	Title    string
	Meta     [][2]string
	Sections []Section
}

// Section is a heading and its blocks (charts, tables, text).
type Section struct {
	Heading string
	Blocks  []Block
}

// style is the page's only style sheet.
const style = `body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1500px;color:#222;padding:0 16px}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:2em}
.plots{display:flex;flex-wrap:wrap;gap:16px}
figure.plot{margin:0;flex:1 1 680px;max-width:740px;border:1px solid #e4e4e4;border-radius:4px;padding:8px;background:#fff}
figure.plot svg{width:100%;height:auto;font-family:inherit}
figcaption{font-weight:600;font-size:.95em;margin-bottom:4px}
pre{background:#f7f7f7;padding:8px;overflow-x:auto;font-size:.85em}
table{border-collapse:collapse;margin:8px 0 16px;font-size:.9em}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left}caption{text-align:left;font-weight:600;padding:4px 0}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:2px 12px;font-size:.9em}dt{font-weight:600}dd{margin:0}
`

// script counts, once the page has loaded, the data marks of every plot
// and records them on <body> for a browser test: data-plots
// ("id=N;id=N"), data-plots-empty (plots without a mark) and
// data-report-errors (script errors seen meanwhile).
const script = `(function(){
var errors=[];
window.addEventListener("error",function(e){errors.push(String(e.message));document.body.setAttribute("data-report-errors",errors.join(" | "));});
function check(){
var figs=document.querySelectorAll("figure.plot"),out=[],empty=0;
for(var i=0;i<figs.length;i++){
var n=figs[i].querySelectorAll("svg .datum").length;
out.push(figs[i].getAttribute("data-plot")+"="+n);
if(n===0){empty++;}
}
document.body.setAttribute("data-plots",out.join(";"));
document.body.setAttribute("data-plots-empty",String(empty));
document.body.setAttribute("data-report-errors",errors.join(" | "));
}
if(document.readyState==="loading"){document.addEventListener("DOMContentLoaded",check);}else{check();}
})();`

// WriteHTML writes p as one self-contained HTML document.
func (p *Page) WriteHTML(w io.Writer) error {
	_, err := io.WriteString(w, p.HTML())
	return err
}

// HTML returns p as one self-contained HTML document.
func (p *Page) HTML() string {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
	b.WriteString(`<meta name="viewport" content="width=device-width,initial-scale=1">`)
	fmt.Fprintf(&b, "<title>%s</title><style>%s</style></head>\n<body>\n", esc(p.Title), style)
	fmt.Fprintf(&b, "<h1>%s</h1>\n", esc(p.Title))
	if len(p.Meta) > 0 {
		b.WriteString(`<dl class="meta">`)
		for _, kv := range p.Meta {
			fmt.Fprintf(&b, "<dt>%s</dt><dd>%s</dd>", esc(kv[0]), esc(kv[1]))
		}
		b.WriteString("</dl>\n")
	}
	for _, s := range p.Sections {
		fmt.Fprintf(&b, "<h2>%s</h2>\n", esc(s.Heading))
		inPlots := false
		for _, blk := range s.Blocks {
			_, chart := blk.(*LineChart)
			if _, bar := blk.(*BarChart); bar {
				chart = true
			}
			if chart != inPlots {
				if chart {
					b.WriteString(`<div class="plots">`)
				} else {
					b.WriteString("</div>\n")
				}
				inPlots = chart
			}
			blk.writeHTML(&b)
		}
		if inPlots {
			b.WriteString("</div>\n")
		}
	}
	fmt.Fprintf(&b, "<script>%s</script>\n</body></html>\n", script)
	return b.String()
}

// Plots returns the charts of p in order, for callers and tests that count
// them.
func (p *Page) Plots() []Block {
	var out []Block
	for _, s := range p.Sections {
		for _, blk := range s.Blocks {
			switch blk.(type) {
			case *LineChart, *BarChart:
				out = append(out, blk)
			}
		}
	}
	return out
}
