package tests

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald/herald/runner/idtag"
	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/email"
	"github.com/herald/herald/runner/sender/sendertest"
	smtpsender "github.com/herald/herald/runner/sender/smtp"
)

// End to end against a real SMTP server, Mailpit (github.com/axllent/mailpit, which
// `make test` installs into .bin/), over STARTTLS with AUTH: text, html, both, a
// unicode subject, a subject that looks like an encoded word, cc and bcc arrive as
// sent (read back through Mailpit's API), and a recipient Mailpit refuses is a
// permanent failure with its reply code.
func TestMailpit(t *testing.T) {
	t.Parallel()
	certFile, keyFile := sendertest.CertFiles(t)
	addrs := freeAddrs(t, 2)
	smtpAddr, apiAddr := addrs[0], addrs[1]
	logs := startTool(t, "mailpit", "--smtp", smtpAddr, "--listen", apiAddr, "--smtp-tls-cert", certFile, "--smtp-tls-key", keyFile,
		"--smtp-require-starttls", "--smtp-auth-accept-any", "--smtp-disable-rdns", "--smtp-allowed-recipients", `^[^x].*@example\.net$`,
		"--database", filepath.Join(t.TempDir(), "mailpit.db"))
	waitHTTP(t, apiAddr)

	pem, _ := os.ReadFile(certFile)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	host, portText, _ := net.SplitHostPort(smtpAddr)
	port, _ := strconv.Atoi(portText)
	s, err := smtpsender.New(smtpsender.Config{Host: host, Port: port, TLS: "starttls", Username: "herald", Password: "secret",
		TLSConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, Timeout: 10 * time.Second,
		Defaults: email.Defaults{MessageIDKey: idtag.StaticKey(sendertest.MessageIDKey), From: "Herald <noreply@example.com>", ReturnPath: "bounces@bounce.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cases := []struct{ subject, payload string }{
		{"text only", `{"subject":"text only","text":"plain words"}`},
		{"html only", `{"subject":"html only","html":"<p>rich <b>words</b></p>"}`},
		{"both parts", `{"subject":"both parts","text":"plain words","html":"<p>rich</p>"}`},
		{"Grüße, 東京 ✓", `{"subject":"Grüße, 東京 ✓","text":"unicode"}`},
		{"=?utf-8?B?Zm9v?= stays", `{"subject":"=?utf-8?B?Zm9v?= stays","text":"literal"}`},
		{"copies", `{"subject":"copies","text":"t","cc":["bo@example.net"],"bcc":["audit@example.net"]}`},
		{"attached", `{"subject":"attached","text":"see the file","html":"<p>logo <img src=\"cid:logo\"></p>","attachments":[
			{"filename":"report.csv","content_type":"text/csv","content":"` + base64.StdEncoding.EncodeToString([]byte("a,b\n1,2\n")) + `"},
			{"filename":"logo.png","content_type":"image/png","disposition":"inline","content_id":"logo","content":"` + base64.StdEncoding.EncodeToString([]byte("\x89PNG-not-really")) + `"}]}`},
	}
	for i, c := range cases {
		m := sender.Message{ID: int64(100 + i), Channel: "email", Recipient: "ana@example.net", Attempt: 1, Payload: json.RawMessage(c.payload)}
		if _, err := s.Send(context.Background(), m); err != nil {
			t.Fatalf("%s: %v\n%s", c.subject, err, logs.String())
		}
	}
	_, err = s.Send(context.Background(), sender.Message{ID: 200, Channel: "email", Recipient: "xavier@example.net", Attempt: 1,
		Payload: json.RawMessage(`{"subject":"refused","text":"t"}`)})
	if f := sendertest.WantClass(t, err, sender.ClassPermanent); !strings.HasPrefix(f.Code, "5") {
		t.Fatalf("the refused recipient: code %q: %v", f.Code, err)
	}

	var list struct {
		Messages []struct {
			ID, Subject string
			To, Cc, Bcc []struct{ Address string }
		} `json:"messages"`
	}
	getJSON(t, "http://"+apiAddr+"/api/v1/messages", &list)
	if len(list.Messages) != len(cases) {
		t.Fatalf("Mailpit holds %d messages, want %d", len(list.Messages), len(cases))
	}
	bySubject := map[string]int{}
	for i, m := range list.Messages {
		bySubject[m.Subject] = i
	}
	for _, c := range cases {
		i, ok := bySubject[c.subject]
		if !ok {
			t.Errorf("no message with the subject %q (Mailpit has %v)", c.subject, bySubject)
			continue
		}
		var full struct{ Text, HTML, ReturnPath string }
		getJSON(t, "http://"+apiAddr+"/api/v1/message/"+list.Messages[i].ID, &full)
		if full.ReturnPath != "bounces@bounce.example.com" { // the envelope sender, where bounces go
			t.Errorf("%s: Return-Path %q", c.subject, full.ReturnPath)
		}
		var want map[string]any
		json.Unmarshal([]byte(c.payload), &want)
		if w, _ := want["text"].(string); w != "" && strings.TrimSpace(full.Text) != w {
			t.Errorf("%s: text %q", c.subject, full.Text)
		}
		if w, _ := want["html"].(string); w != "" && !strings.Contains(full.HTML, w) {
			t.Errorf("%s: html %q", c.subject, full.HTML)
		}
	}
	// The attachment and the inline part arrive with their names, types and bytes.
	var attached struct {
		Attachments, Inline []struct{ PartID, FileName, ContentType, ContentID string }
	}
	id := list.Messages[bySubject["attached"]].ID
	getJSON(t, "http://"+apiAddr+"/api/v1/message/"+id, &attached)
	if len(attached.Attachments) != 1 || attached.Attachments[0].FileName != "report.csv" || attached.Attachments[0].ContentType != "text/csv" ||
		len(attached.Inline) != 1 || attached.Inline[0].FileName != "logo.png" || attached.Inline[0].ContentID != "logo" {
		t.Fatalf("attachments: %+v", attached)
	}
	for part, want := range map[string]string{attached.Attachments[0].PartID: "a,b\n1,2\n", attached.Inline[0].PartID: "\x89PNG-not-really"} {
		resp, err := http.Get("http://" + apiAddr + "/api/v1/message/" + id + "/part/" + part)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != want {
			t.Errorf("part %s: %q, want %q", part, b, want)
		}
	}
	copies := list.Messages[bySubject["copies"]]
	if len(copies.Cc) != 1 || copies.Cc[0].Address != "bo@example.net" || len(copies.Bcc) != 1 || copies.Bcc[0].Address != "audit@example.net" {
		t.Fatalf("copies: cc %v bcc %v", copies.Cc, copies.Bcc)
	}
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
