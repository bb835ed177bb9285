SELECT herald._url_host('https://a.shop.example.co.uk/x');
