//! kube-rs's client, built as `ClientBuilder::try_from(Config)` builds it (TLS
//! from the kubeconfig, its timeouts, retries, auth and headers) with one
//! difference: TCP_NODELAY on the connection, as Go's net package (so kubectl)
//! sets it. kube-rs leaves Nagle's algorithm on, and an exec stream's stdin goes
//! out in 4 KiB WebSocket messages: every message after the first waited for
//! the API server's delayed acknowledgement, 30–40 ms per `berth sync` update
//! (measured with strace on the test plane: the frame's second half arrived
//! 27 ms after its first).
//!
//! Left out against kube-rs's stack: its HTTP tracing spans (berth logs its
//! own actions), the expiry of an exec plugin's client certificate (kube-rs
//! only records it, for `Client::valid_until`, which berth does not read), and
//! proxies, which berth's kube features do not enable and which the plain
//! builder refuses too.

use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::{retry::RetryPolicy, ClientBuilder, ConfigExt, DynBody};
use kube::Config;
use tower::retry::RetryLayer;
use tower::util::BoxService;
use tower::{BoxError, ServiceBuilder, ServiceExt as _};
use tower_http::ServiceExt as _;

/// The service kube-rs's own builder makes.
type Service =
    BoxService<http::Request<kube::client::Body>, http::Response<Box<DynBody>>, BoxError>;

/// A client builder for `config` whose connections send without delay.
pub(crate) fn builder(config: Config) -> Result<ClientBuilder<Service>, kube::Error> {
    if let Some(proxy) = &config.proxy_url {
        return Err(kube::Error::ProxyProtocolUnsupported {
            proxy_url: Box::new(proxy.clone()),
        });
    }
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let tls = config.rustls_https_connector_with_connector(http)?;
    let mut connector = TimeoutConnector::new(tls);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let client: hyper_util::client::legacy::Client<_, kube::client::Body> =
        hyper_util::client::legacy::Builder::new(TokioExecutor::new()).build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .default_retry
                .then(|| RetryLayer::new(RetryPolicy::server_retry())),
        )
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(client);
    let service = service
        .map_response_body(|body| {
            Box::new(http_body_util::BodyExt::map_err(body, BoxError::from)) as Box<DynBody>
        })
        .boxed();
    Ok(ClientBuilder::new(
        service,
        config.default_namespace.clone(),
    ))
}
