package sendertest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// SES access key of FakeSES: requests must be signed (AWS Signature Version 4, service
// ses, region SESRegion) with this key and secret.
const (
	SESAccessKey = "AKIDHERALDTEST"
	SESSecretKey = "herald-ses-test-secret"
	SESRegion    = "eu-west-1"
)

// SESRequests are the SendEmail requests FakeSES accepted.
type SESRequests struct {
	mu   sync.Mutex
	sent []SESSend
	// Paused makes GetAccount answer SendingEnabled false.
	Paused bool
}

// SESSend is one accepted SendEmail request.
type SESSend struct {
	To, Cc, Bcc      []string
	Raw              string
	Tags             map[string]string
	ConfigurationSet string
	FeedbackTo       string
}

// Sent returns the accepted requests in order.
func (r *SESRequests) Sent() []SESSend {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]SESSend(nil), r.sent...)
}

// FakeSES serves the Amazon SES v2 API's SendEmail (POST /v2/email/outbound-emails,
// raw content) and GetAccount (GET /v2/email/account), checking each request's
// Signature Version 4 against SESAccessKey (403 SignatureDoesNotMatch or
// UnrecognizedClientException otherwise) and answering errors as SES does (status,
// X-Amzn-ErrorType, {"message"}). The verified identities are noreply@example.com and
// example.com's other senders given; recipients choose the answer: throttled@… 429
// TooManyRequestsException (Maximum sending rate exceeded), quota@… Daily message
// quota exceeded, sandboxed@… 400 MessageRejected (not verified: the sandbox), fails@…
// 500.
func FakeSES(t testing.TB, senders ...string) (*httptest.Server, *SESRequests) {
	verified := map[string]bool{"noreply@example.com": true}
	for _, s := range senders {
		verified[strings.ToLower(s)] = true
	}
	reqs := &SESRequests{}
	fromHeader := regexp.MustCompile(`(?mi)^From: (?:.*<)?([^<>\s]+@[^<>\s]+)>?\r?$`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer := func(status int, errorType, message string) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Amzn-ErrorType", errorType)
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]string{"message": message})
		}
		body, _ := io.ReadAll(r.Body)
		if code, why := checkSigV4(r, body); code != "" {
			answer(http.StatusForbidden, code, why)
			return
		}
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v2/email/account":
			reqs.mu.Lock()
			paused := reqs.Paused
			reqs.mu.Unlock()
			json.NewEncoder(w).Encode(map[string]any{"SendingEnabled": !paused, "ProductionAccessEnabled": true,
				"SendQuota": map[string]float64{"Max24HourSend": 50000, "MaxSendRate": 14, "SentLast24Hours": 0}})
			return
		case r.Method != http.MethodPost || r.URL.Path != "/v2/email/outbound-emails":
			answer(http.StatusNotFound, "NotFoundException", "no such resource")
			return
		}
		var in struct {
			Destination struct{ ToAddresses, CcAddresses, BccAddresses []string }
			Content     struct{ Raw struct{ Data []byte } }
			EmailTags   []struct{ Name, Value string }
			ConfigurationSetName,
			FeedbackForwardingEmailAddress string
		}
		if err := json.Unmarshal(body, &in); err != nil || len(in.Content.Raw.Data) == 0 {
			answer(http.StatusBadRequest, "BadRequestException", "Raw content is required")
			return
		}
		raw := string(in.Content.Raw.Data)
		from := ""
		if m := fromHeader.FindStringSubmatch(raw); m != nil {
			from = strings.ToLower(m[1])
		}
		if !verified[from] {
			answer(http.StatusBadRequest, "MessageRejected", "Email address is not verified. The following identities failed the check in region EU-WEST-1: "+from)
			return
		}
		to := ""
		if len(in.Destination.ToAddresses) > 0 {
			to = in.Destination.ToAddresses[0]
		}
		switch local, _, _ := strings.Cut(to, "@"); local {
		case "throttled":
			answer(http.StatusTooManyRequests, "TooManyRequestsException", "Maximum sending rate exceeded.")
			return
		case "quota":
			answer(http.StatusTooManyRequests, "TooManyRequestsException", "Daily message quota exceeded.")
			return
		case "sandboxed":
			answer(http.StatusBadRequest, "MessageRejected", "Email address is not verified. The following identities failed the check in region EU-WEST-1: "+to)
			return
		case "fails":
			answer(http.StatusInternalServerError, "InternalFailure", "An internal error occurred.")
			return
		}
		tags := map[string]string{}
		for _, tg := range in.EmailTags {
			tags[tg.Name] = tg.Value
		}
		reqs.mu.Lock()
		reqs.sent = append(reqs.sent, SESSend{To: in.Destination.ToAddresses, Cc: in.Destination.CcAddresses, Bcc: in.Destination.BccAddresses,
			Raw: raw, Tags: tags, ConfigurationSet: in.ConfigurationSetName, FeedbackTo: in.FeedbackForwardingEmailAddress})
		n := len(reqs.sent)
		reqs.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"MessageId":"0102019a%08d-herald-ses-000000"}`, n)
	}))
	t.Cleanup(srv.Close)
	return srv, reqs
}

// authorization is an AWS4-HMAC-SHA256 Authorization header's parts.
var authorization = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$`)

// checkSigV4 verifies r's Signature Version 4 by signing its signed headers and body
// again with SESSecretKey; it returns the error type and message SES would answer, or
// "" when the signature holds.
func checkSigV4(r *http.Request, body []byte) (string, string) {
	m := authorization.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		return "MissingAuthenticationTokenException", "Missing Authentication Token"
	}
	if m[1] != SESAccessKey {
		return "UnrecognizedClientException", "The security token included in the request is invalid."
	}
	if m[3] != SESRegion || m[4] != "ses" {
		return "SignatureDoesNotMatch", "Credential should be scoped to a valid region and service ses."
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "IncompleteSignatureException", "X-Amz-Date is missing or malformed"
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	again.Header = http.Header{}
	for _, h := range strings.Split(m[5], ";") {
		if h != "host" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	again.ContentLength = r.ContentLength
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: SESAccessKey, SecretAccessKey: SESSecretKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), "ses", SESRegion, at); err != nil {
		return "SignatureDoesNotMatch", err.Error()
	}
	if got := authorization.FindStringSubmatch(again.Header.Get("Authorization")); got == nil || got[6] != m[6] {
		return "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided."
	}
	return "", ""
}
