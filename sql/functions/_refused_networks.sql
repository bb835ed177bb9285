-- herald._refused_networks() — the networks a webhook may not reach unless the runner's
-- operator allows them: loopback, private (RFC 1918), carrier-grade NAT, link-local
-- (cloud metadata), unique-local, unspecified, multicast, broadcast, reserved, and
-- IPv6 forms with an IPv4 address inside (IPv4-mapped and -compatible, NAT64, Teredo,
-- 6to4). Specific networks come before those that contain them. herald._refused_address refuses literal
-- addresses in them at enqueue; the runner refuses them at connect time (package
-- runner/sender/egress, kept equal to this list by a test). Locks: none.
CREATE OR REPLACE FUNCTION herald._refused_networks()
RETURNS TABLE (network cidr, reason text)
LANGUAGE sql
IMMUTABLE
AS $$
  VALUES
    ('0.0.0.0/8'::cidr, 'unspecified'),
    ('10.0.0.0/8'::cidr, 'private'),
    ('100.64.0.0/10'::cidr, 'carrier-grade NAT'),
    ('127.0.0.0/8'::cidr, 'loopback'),
    ('169.254.0.0/16'::cidr, 'link-local'),
    ('172.16.0.0/12'::cidr, 'private'),
    ('192.0.0.0/24'::cidr, 'reserved'),
    ('192.168.0.0/16'::cidr, 'private'),
    ('198.18.0.0/15'::cidr, 'reserved'),
    ('224.0.0.0/4'::cidr, 'multicast'),
    ('240.0.0.0/4'::cidr, 'reserved or broadcast'),
    ('::/128'::cidr, 'unspecified'),
    ('::1/128'::cidr, 'loopback'),
    ('::/96'::cidr, 'IPv4-compatible'),
    ('::ffff:0:0/96'::cidr, 'IPv4-mapped'),
    ('64:ff9b::/96'::cidr, 'NAT64'),
    ('64:ff9b:1::/48'::cidr, 'NAT64'),
    ('2001::/32'::cidr, 'Teredo'),
    ('2002::/16'::cidr, '6to4'),
    ('fc00::/7'::cidr, 'unique-local'),
    ('fe80::/10'::cidr, 'link-local'),
    ('ff00::/8'::cidr, 'multicast')
$$;

REVOKE ALL ON FUNCTION herald._refused_networks() FROM PUBLIC;
COMMENT ON FUNCTION herald._refused_networks() IS
  'Private: networks webhooks may not reach by default (loopback, private, link-local, ...), with the reason.';
