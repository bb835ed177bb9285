// Package ses delivers e-mail through the Amazon SES v2 API (SendEmail, the message
// sent raw: the same MIME as the SMTP sender's, with herald's Message-ID, which SES
// reports back in its event notifications' commonHeaders), signed with AWS Signature
// Version 4 by the AWS SDK for Go, whose credential chain finds the keys where AWS
// puts them: the environment, a shared profile, an EKS service account's web
// identity, an ECS task role, EC2 instance metadata. The provider id is the
// Message-ID. The SDK does not retry: herald's policy does.
//
// # Failure classes
//
//	TooManyRequestsException, ThrottlingException  rate_limited in a second; "Daily
//	                                                message quota exceeded": quota
//	MessageRejected naming the From as unverified   the channel's From: configuration;
//	                                                the payload's own: permanent
//	                                                (email.SenderRefused)
//	MessageRejected, BadRequestException            permanent (a sandbox's unverified
//	                                                recipient among them)
//	MailFromDomainNotVerifiedException,
//	AccountSuspendedException, SendingPausedException,
//	NotFoundException (no such configuration set),
//	credentials missing, expired or refused (403)  configuration (the channel pauses)
//	5xx, no answer                                  transient (in doubt once the
//	                                                request was written)
//
// The error code is the failure's Code.
package ses

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/smithy-go"

	"github.com/herald/herald/runner/sender"
	"github.com/herald/herald/runner/sender/email"
)

// Config is how to reach SES.
type Config struct {
	// Region is the SES region (us-east-1…); empty: the SDK's (AWS_REGION, the profile).
	Region string
	// ConfigurationSet names the SES configuration set whose event destinations
	// publish the messages' deliveries, bounces and complaints (to SNS, herald's
	// /v1/events/ses); empty: none.
	ConfigurationSet string
	// Endpoint replaces the region's API endpoint (a VPC endpoint, a test double).
	Endpoint string
	Timeout  time.Duration // per request, default 10s
	Defaults email.Defaults
	// RootCAs, when not nil, are the only CAs trusted for the API's TLS.
	RootCAs *x509.CertPool
}

// Sender sends e-mail through SES. It is safe for concurrent use.
type Sender struct {
	cfg    Config
	client *sesv2.Client
	creds  aws.CredentialsProvider // the SDK's chain, cached
}

// New loads the AWS configuration (region, credential chain) and returns a Sender.
// Credentials are looked up at the first request, not here.
func New(ctx context.Context, cfg Config) (*Sender, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.RootCAs == nil && os.Getenv("AWS_CA_BUNDLE") != "" { // the AWS tools' own setting, for a proxy's CA
		pem, err := os.ReadFile(os.Getenv("AWS_CA_BUNDLE"))
		if err != nil {
			return nil, fmt.Errorf("ses: AWS_CA_BUNDLE: %w", err)
		}
		if cfg.RootCAs, err = x509.SystemCertPool(); err != nil {
			cfg.RootCAs = x509.NewCertPool()
		}
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ses: AWS_CA_BUNDLE: no PEM certificate in %s", os.Getenv("AWS_CA_BUNDLE"))
		}
	}
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRetryMaxAttempts(1)}
	if cfg.Region != "" {
		opts = append(opts, awsconfig.WithRegion(cfg.Region))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("ses: the AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, errors.New("ses: no region: set HERALD_SES_REGION or AWS_REGION")
	}
	client := sesv2.NewFromConfig(awsCfg, func(o *sesv2.Options) {
		o.HTTPClient = doer{sender.ProviderClient(cfg.Timeout, cfg.RootCAs)}
		if cfg.Endpoint != "" {
			o.BaseEndpoint = &cfg.Endpoint
		}
	})
	return &Sender{cfg: cfg, client: client, creds: awsCfg.Credentials}, nil
}

// doer sends the SDK's requests with herald's provider client (sender.Do): pooled
// connections, bounded answers, and a failure after the request was written marked in
// doubt.
type doer struct{ c *http.Client }

func (d doer) Do(r *http.Request) (*http.Response, error) { return sender.Do(d.c, r) }

// Send delivers one message. The provider id it reports is the Message-ID.
func (s *Sender) Send(ctx context.Context, m sender.Message) (sender.Result, error) {
	e, err := email.Build(ctx, m, s.cfg.Defaults)
	if err != nil {
		return sender.Result{}, err
	}
	msg, err := e.MIME()
	if err != nil {
		return sender.Result{}, err
	}
	var raw bytes.Buffer
	if _, err := msg.WriteTo(&raw); err != nil {
		return sender.Result{}, sender.Permanent(fmt.Errorf("the message: %w", err))
	}
	in := &sesv2.SendEmailInput{
		Destination: &types.Destination{ToAddresses: []string{e.To}, CcAddresses: e.Cc, BccAddresses: e.Bcc},
		Content:     &types.EmailContent{Raw: &types.RawMessage{Data: raw.Bytes()}},
		EmailTags:   []types.MessageTag{{Name: aws.String("herald_id"), Value: aws.String(fmt.Sprint(m.ID))}},
	}
	if s.cfg.ConfigurationSet != "" {
		in.ConfigurationSetName = aws.String(s.cfg.ConfigurationSet)
	}
	if e.ReturnPath != "" { // SES's own MAIL FROM: bounces and complaints forwarded here
		in.FeedbackForwardingEmailAddress = aws.String(e.ReturnPath)
	}
	if err := s.credentials(ctx); err != nil {
		return sender.Result{}, err
	}
	if _, err := s.client.SendEmail(ctx, in); err != nil {
		return sender.Result{}, classify(err, e)
	}
	return sender.Result{ProviderMessageID: e.MessageID}, nil
}

// Check reads the account (GetAccount, sender.Checker): credentials that are missing
// or refused, or sending paused for the account, are configuration.
func (s *Sender) Check(ctx context.Context) error {
	if err := s.credentials(ctx); err != nil {
		return err
	}
	out, err := s.client.GetAccount(ctx, &sesv2.GetAccountInput{})
	if err != nil {
		return classify(err, email.Email{})
	}
	if !out.SendingEnabled {
		return sender.Configuration(errors.New("SES: sending is paused for this account in this region"), "SendingPausedException")
	}
	return nil
}

// credentials has the SDK's chain find the AWS credentials (cached until they
// expire): none found, or their source refusing, is the channel's configuration.
func (s *Sender) credentials(ctx context.Context) error {
	if s.creds == nil {
		return sender.Configuration(errors.New("SES: no AWS credentials provider"), "credentials")
	}
	if _, err := s.creds.Retrieve(ctx); err != nil {
		return sender.Configuration(fmt.Errorf("SES: no AWS credentials: %w", err), "credentials")
	}
	return nil
}

// classify maps an SES or SDK error to a failure class (the package doc); e says
// whose the From is, for a refusal of it.
func classify(err error, e email.Email) error {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return sender.FromNetwork(err) // no answer: transient, or a certificate or name: configuration
	}
	code, text := api.ErrorCode(), api.ErrorMessage()
	f := &sender.Failure{Class: sender.ClassPermanent, Code: code, Err: fmt.Errorf("SES %s: %s", code, text)}
	status := 0
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	lower := strings.ToLower(text)
	switch {
	case strings.Contains(lower, "daily message quota exceeded"):
		f.Class = sender.ClassQuota
	case code == "TooManyRequestsException" || code == "ThrottlingException" || code == "Throttling" || status == http.StatusTooManyRequests:
		f.Class, f.RetryAt = sender.ClassRateLimited, time.Now().Add(time.Second)
	case code == "MessageRejected" && strings.Contains(lower, "not verified") && e.FromAddress != "" &&
		strings.Contains(lower, strings.ToLower(e.FromAddress)):
		return e.SenderRefused(f, false)
	case code == "MailFromDomainNotVerifiedException" || code == "AccountSuspendedException" || code == "SendingPausedException" ||
		code == "NotFoundException" || status == http.StatusForbidden || status == http.StatusUnauthorized ||
		code == "UnrecognizedClientException" || code == "InvalidClientTokenId" || code == "ExpiredTokenException" ||
		code == "SignatureDoesNotMatch" || code == "AccessDeniedException":
		f.Class = sender.ClassConfiguration
	case status >= 500 || status == 0 && api.ErrorFault() == smithy.FaultServer:
		f.Class, f.Unavailable = sender.ClassTransient, true
	}
	return f
}
