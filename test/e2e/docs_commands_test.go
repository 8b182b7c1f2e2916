package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/winnode/winnode/internal/cli"
	"github.com/winnode/winnode/internal/testenv"
)

// TestDocsCommandsOnAHost runs every command the docs show to be run on a
// Windows host against a simulated host that the operator configured,
// through `winnodectl ssh` as the docs say, so that the docs and the
// simulator cannot drift apart: each answers, in the format its Windows
// program has, and none with "is not recognized". The commands are read
// from the Markdown (docCommands): PowerShell blocks line by line, and the
// `winnodectl ssh NODE -- ...` and `ssh ... HOST COMMAND` lines of shell
// blocks, split as a POSIX shell splits them.
func TestDocsCommandsOnAHost(t *testing.T) {
	w := getWorld(t)
	h := w.newHost(t)
	w.startOperator(t, operatorOptions{})
	w.instanceFor(t, "docs", h)
	node := w.waitReady(t, "docs", 3*time.Minute).Status.NodeName

	cmds := docCommands(t)
	if len(cmds) < 10 {
		t.Fatalf("found only %d host commands in the docs; the reading is broken:\n%v", len(cmds), cmds)
	}
	for _, c := range cmds {
		t.Run(c.String(), func(t *testing.T) {
			var out, errOut strings.Builder
			args := append([]string{"ssh", "--kubeconfig", w.env.KubeconfigPath, "--namespace", Namespace, node, "--"}, c.args...)
			code := cli.Execute(context.Background(), args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
			checkDocCommand(t, c, code, out.String(), errOut.String(), h.Hostname())
		})
	}
}

// checkDocCommand checks what one command answered: success with output,
// in the format the docs imply; a command for the other network mode
// (its comment is "ovn-hybrid": the world runs flannel) fails as
// PowerShell does for a missing file.
func checkDocCommand(t *testing.T, c docCommand, code int, out, errOut, hostname string) {
	t.Helper()
	if strings.Contains(out+errOut, "is not recognized") || strings.Contains(out+errOut, "not simulated") {
		t.Fatalf("exit %d: the simulated host does not run it\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if c.comment == "ovn-hybrid" {
		if code != 1 || !strings.Contains(errOut, "Cannot find path") {
			t.Errorf("a command for ovn-hybrid on a flannel host: exit %d, stderr %q; want PowerShell's \"Cannot find path\"", code, errOut)
		}
		return
	}
	if code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("exit %d, want 0 with output\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	joined := strings.Join(c.args, " ")
	for pattern, want := range map[string]string{
		`^hostname$`:              "^" + regexp.QuoteMeta(hostname) + "\r\n$",
		`^systeminfo$`:            "\r\nOS Name: +Microsoft Windows Server 2019 Datacenter\r\n",
		`Get-Service kubelet`:     "\r\nRunning  kubelet            Kubernetes kubelet\r\n",
		`^sc.exe qc kubelet$`:     "\r\n        DEPENDENCIES       : containerd\r\n",
		`winnode-agent.exe info`:  `"hostname": *"` + regexp.QuoteMeta(hostname) + `"`,
		`^ipconfig /all$`:         "Host Name . . . . . . . . . . . . : " + regexp.QuoteMeta(hostname) + "\r\n",
		`Get-HnsNetwork`:          "\r\nvxlan0 +Overlay +\\{@\\{AddressPrefix=10\\.244\\.",
		`10-winnode.conf`:         `"type": *"win-overlay"`,
		`kubelet.log -Tail 50`:    ".",
		`containerd.exe.*version`: "containerd",
	} {
		if regexp.MustCompile(pattern).MatchString(joined) && !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("stdout does not match %q:\n%s", want, out)
		}
	}
}

// docCommand is a command the docs run on a host: its arguments as
// winnodectl ssh gets them after --, where it is, and its trailing comment.
type docCommand struct {
	args    []string
	where   string
	comment string
}

func (c docCommand) String() string { return c.where + " " + strings.Join(c.args, " ") }

// docCommands reads the host commands of README.md and docs/*.md.
func docCommands(t *testing.T) []docCommand {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"))
	var cmds []docCommand
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := hostCommands(string(data), filepath.Base(f))
		if err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, got...)
	}
	return cmds
}

// hostCommands reads the host commands of one Markdown file: each line of
// a powershell block (run as `powershell -Command LINE`, as one types it
// at a PowerShell prompt), and in shell blocks what follows
// `winnodectl ssh HOST --` or `ssh [-i KEY] USER@HOST`.
func hostCommands(markdown, file string) ([]docCommand, error) {
	var cmds []docCommand
	lang, inBlock := "", false
	sc := bufio.NewScanner(strings.NewReader(markdown))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			lang, inBlock = strings.TrimSpace(strings.TrimPrefix(line, "```")), !inBlock
			continue
		}
		text := strings.TrimSpace(line)
		where := fmt.Sprintf("%s:%d", file, n)
		switch {
		case !inBlock || text == "" || strings.HasPrefix(text, "#"):
		case lang == "powershell":
			command, comment, _ := strings.Cut(text, "#")
			cmds = append(cmds, docCommand{args: []string{"powershell", "-Command", strings.TrimSpace(command)}, where: where, comment: strings.TrimSpace(comment)})
		case (lang == "sh" || lang == "") && (strings.HasPrefix(text, "winnodectl ssh ") || strings.HasPrefix(text, "ssh ")):
			words, comment, err := shellWords(text)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if args := remoteCommand(words); len(args) > 0 {
				cmds = append(cmds, docCommand{args: args, where: where, comment: comment})
			}
		}
	}
	return cmds, sc.Err()
}

// remoteCommand is what a shell command line runs on a host: after
// `winnodectl ssh HOST --`, or after `ssh [-i KEY] USER@HOST` (OpenSSH
// joins those words into one command line; here they stay words).
func remoteCommand(words []string) []string {
	switch {
	case len(words) > 3 && words[0] == "winnodectl" && words[1] == "ssh" && words[3] == "--":
		return words[4:]
	case len(words) > 1 && words[0] == "ssh":
		for i := 1; i < len(words); i++ {
			switch {
			case words[i] == "-i":
				i++
			case strings.Contains(words[i], "@"):
				return words[i+1:]
			}
		}
	}
	return nil
}

// shellWords splits a line as a POSIX shell does: 'single' quotes keep
// everything, "double" quotes keep all but \\ \" \$ \`, an unquoted \
// keeps the next character; a # starting a word starts the comment.
func shellWords(line string) (words []string, comment string, err error) {
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case c == '#' && !inWord:
			return words, strings.TrimSpace(line[i+1:]), nil
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == '\'' || c == '"':
			end := strings.IndexByte(line[i+1:], c)
			if end < 0 {
				return nil, "", fmt.Errorf("unterminated %c in %q", c, line)
			}
			s := line[i+1 : i+1+end]
			if c == '"' {
				s = regexp.MustCompile("\\\\([\\\\\"$`])").ReplaceAllString(s, "$1")
			}
			cur.WriteString(s)
			i, inWord = i+1+end, true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, "", nil
}
