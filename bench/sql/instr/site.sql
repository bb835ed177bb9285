SELECT herald._site(herald._url_host(r)) FROM unnest(ARRAY['https://a.shop.example.co.uk/x']) r;
