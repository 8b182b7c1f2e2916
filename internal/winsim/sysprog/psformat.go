package sysprog

import (
	"fmt"
	"strconv"
	"strings"
)

// What the PowerShell stand-in's commands pass down a pipeline: strings
// (lines of text, a native program's output) or objects, and how the end of
// a pipeline shows them (Out-Default), as Windows PowerShell 5.1 does.

// psObject is an object with ordered properties. kind selects its view.
type psObject struct {
	kind  string // psService, psMatch or "" (shown by its properties)
	props []psProp
	// line is what a match shows (MatchInfo's ToString).
	line string
}

type psProp struct {
	name  string
	value any // string, int, []any (of string or *psObject), *psObject
}

const (
	psService = "System.ServiceProcess.ServiceController"
	psMatch   = "Microsoft.PowerShell.Commands.MatchInfo"
)

func (o *psObject) get(name string) (any, bool) {
	for _, p := range o.props {
		if strings.EqualFold(p.name, name) {
			return p.value, true
		}
	}
	return nil, false
}

// psString is a value as a table cell or list entry shows it: a list as
// {a, b}, an object as @{Name=value; ...}.
func psString(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = psString(e)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case *psObject:
		if v.kind == psMatch {
			return v.line
		}
		parts := make([]string, len(v.props))
		for i, p := range v.props {
			parts[i] = p.name + "=" + psString(p.value)
		}
		return "@{" + strings.Join(parts, "; ") + "}"
	}
	return fmt.Sprint(v)
}

// outDefault writes what reached the end of a pipeline: strings one a
// line; services in their table view; matches as their lines; other
// objects as a table when they have at most four properties, else as a
// list (PowerShell's rule for objects without a view). Each run of objects
// of one kind is one table, between blank lines as PowerShell prints them.
func outDefault(b *strings.Builder, values []any) {
	for i := 0; i < len(values); {
		j := i + 1
		for j < len(values) && sameShape(values[i], values[j]) {
			j++
		}
		run := values[i:j]
		switch v := values[i].(type) {
		case string:
			for _, s := range run {
				b.WriteString(s.(string) + "\n")
			}
		case *psObject:
			objs := make([]*psObject, len(run))
			for k, o := range run {
				objs[k] = o.(*psObject)
			}
			switch {
			case v.kind == psService:
				serviceTable(b, objs)
			case v.kind == psMatch:
				b.WriteString("\n")
				for _, o := range objs {
					b.WriteString(o.line + "\n")
				}
				b.WriteString("\n\n")
			case len(v.props) <= 4:
				autoTable(b, objs)
			default:
				list(b, objs)
			}
		}
		i = j
	}
}

func sameShape(a, b any) bool {
	oa, aok := a.(*psObject)
	ob, bok := b.(*psObject)
	if !aok || !bok {
		return aok == bok
	}
	if oa.kind != ob.kind || len(oa.props) != len(ob.props) {
		return false
	}
	for i := range oa.props {
		if oa.props[i].name != ob.props[i].name {
			return false
		}
	}
	return true
}

// serviceTable is Get-Service's table view (Windows PowerShell 5.1's
// DotNetTypes.format.ps1xml: Status 8, Name 18, DisplayName 38 columns
// wide, a value too long for its column cut to "...").
func serviceTable(b *strings.Builder, objs []*psObject) {
	rows := [][]string{}
	for _, o := range objs {
		st, _ := o.get("Status")
		name, _ := o.get("Name")
		dn, _ := o.get("DisplayName")
		rows = append(rows, []string{psString(st), psString(name), psString(dn)})
	}
	table(b, []string{"Status", "Name", "DisplayName"}, []int{8, 18, 38}, rows)
}

// autoTable is the table of objects without a view: each column as wide
// as its widest value or header (PowerShell 5.1 sizes a table from the
// objects it has buffered, which for a short output is all of them).
func autoTable(b *strings.Builder, objs []*psObject) {
	var headers []string
	for _, p := range objs[0].props {
		headers = append(headers, p.name)
	}
	widths := make([]int, len(headers))
	rows := make([][]string, len(objs))
	for i, h := range headers {
		widths[i] = len(h)
	}
	for r, o := range objs {
		for i, p := range o.props {
			rows[r] = append(rows[r], psString(p.value))
			widths[i] = max(widths[i], len(rows[r][i]))
		}
	}
	table(b, headers, widths, rows)
}

// table writes a table: a blank line, the headers, dashes as long as each
// header, the rows, two blank lines. Columns are one space apart; the last
// is not padded.
func table(b *strings.Builder, headers []string, widths []int, rows [][]string) {
	line := func(cells []string) {
		var l strings.Builder
		for i, c := range cells {
			if len(c) > widths[i] {
				c = c[:max(widths[i]-3, 0)] + "..."
			}
			if i < len(cells)-1 {
				fmt.Fprintf(&l, "%-*s ", widths[i], c)
			} else {
				l.WriteString(c)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	b.WriteString("\n")
	line(headers)
	dashes := make([]string, len(headers))
	for i, h := range headers {
		dashes[i] = strings.Repeat("-", len(h))
	}
	line(dashes)
	for _, r := range rows {
		line(r)
	}
	b.WriteString("\n\n")
}

// list is the list view: each object's properties as "Name : value", names
// padded to the longest, objects a blank line apart.
func list(b *strings.Builder, objs []*psObject) {
	b.WriteString("\n")
	for _, o := range objs {
		width := 0
		for _, p := range o.props {
			width = max(width, len(p.name))
		}
		b.WriteString("\n")
		for _, p := range o.props {
			fmt.Fprintf(b, "%-*s : %s\n", width, p.name, psString(p.value))
		}
	}
	b.WriteString("\n\n")
}

// psError writes an error record as PowerShell's console shows it: the
// command, the message, where it is ("At line:1 char:1", the line and a
// ~ under the command), its category and fully qualified error ID.
func psError(b *strings.Builder, c *psCommand, message, category, fqid string) {
	fmt.Fprintf(b, "%s : %s\n", c.name, message)
	fmt.Fprintf(b, "At line:%d char:%d\n", c.line, c.col)
	fmt.Fprintf(b, "+ %s\n", c.lineText)
	fmt.Fprintf(b, "+ %s%s\n", strings.Repeat(" ", c.col-1), strings.Repeat("~", max(c.end-c.col, 1)))
	fmt.Fprintf(b, "    + CategoryInfo          : %s\n", category)
	fmt.Fprintf(b, "    + FullyQualifiedErrorId : %s\n \n", fqid)
}
