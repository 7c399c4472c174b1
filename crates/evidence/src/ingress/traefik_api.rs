//! Traefik's own endpoint view, from its API (`GET /api/http/services`, served with `--api` on
//! its `traefik` entry point): each load-balancer service and its servers, a server `fenced`
//! while its endpoint is terminating (Traefik sends it no new request; with every server fenced
//! it answers 503). A server that is gone is absent.

use serde::Deserialize;

use super::view::Server;

/// The path of the services list.
pub const SERVICES_PATH: &str = "/api/http/services";

/// The most services one answer lists (Traefik pages its lists, 100 by default).
pub const PER_PAGE: u32 = 1000;

/// The services list narrowed to names holding `search` (Traefik's Kubernetes providers name a
/// service after its namespace first, so the target's namespace keeps the other tenants'
/// servers out), up to [`PER_PAGE`] of them: a target past the first page would read as gone.
pub fn services_path(search: &str) -> String {
    let safe: String = search
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.')
        .collect();
    format!("{SERVICES_PATH}?search={safe}&per_page={PER_PAGE}")
}

/// The name of the container port the API is read on (the Helm chart's, for the `traefik`
/// entry point).
pub const API_PORT_NAME: &str = "traefik";

/// Why the API's answer was not read.
#[derive(Debug, thiserror::Error)]
#[error("Traefik's {SERVICES_PATH} is not the JSON list of services it serves: {0}")]
pub struct ApiError(#[from] serde_json::Error);

#[derive(Deserialize)]
struct ApiService {
    name: String,
    #[serde(rename = "loadBalancer")]
    load_balancer: Option<LoadBalancer>,
}

#[derive(Deserialize)]
struct LoadBalancer {
    #[serde(default)]
    servers: Vec<ApiServer>,
}

#[derive(Deserialize)]
struct ApiServer {
    url: Option<String>,
    #[serde(default)]
    fenced: bool,
}

/// Every load-balancer server the answer lists, in service then address order; a service
/// without a load balancer (weighted, mirroring) or a server without a URL has none.
pub fn servers(json: &str) -> Result<Vec<Server>, ApiError> {
    let services: Vec<ApiService> = serde_json::from_str(json)?;
    let mut out: Vec<Server> = services
        .into_iter()
        .flat_map(|s| {
            let name = s.name;
            s.load_balancer
                .map(|lb| lb.servers)
                .unwrap_or_default()
                .into_iter()
                .filter_map(move |srv| {
                    Some(Server {
                        service: name.clone(),
                        address: address_of(srv.url.as_deref()?)?,
                        fenced: srv.fenced,
                    })
                })
        })
        .collect();
    out.sort();
    Ok(out)
}

/// `IP:PORT` of `http://IP:PORT` (or `h2c://`, `https://`), without a path.
fn address_of(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split('/').next()?;
    (!host.is_empty()).then(|| host.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_server_is_read_with_its_service_and_whether_it_is_fenced() {
        let json = r#"[
          {"loadBalancer":{"servers":[{"url":"http://10.244.1.3:8080"},{"url":"http://10.244.0.7:8080","fenced":true}],"passHostHeader":true},
           "status":"enabled","name":"shop-web-80@kubernetes","provider":"kubernetes","type":"loadbalancer"},
          {"weighted":{"services":[{"name":"a"}]},"name":"w@file","provider":"file","type":"weighted"},
          {"loadBalancer":{"servers":[{"url":"h2c://10.244.2.2:9000/"}]},"name":"grpc@kubernetes"}
        ]"#;
        let s = servers(json).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(
            s[0],
            Server {
                service: "grpc@kubernetes".into(),
                address: "10.244.2.2:9000".into(),
                fenced: false
            }
        );
        assert_eq!(
            (s[1].address.as_str(), s[1].fenced),
            ("10.244.0.7:8080", true)
        );
        assert_eq!(
            (s[2].address.as_str(), s[2].fenced),
            ("10.244.1.3:8080", false)
        );
        assert!(servers("[]").unwrap().is_empty());
        assert_eq!(
            services_path("shop&x=1"),
            "/api/http/services?search=shopx1&per_page=1000"
        );
        assert!(servers("404 page not found").is_err());
        assert!(servers(r#"{"name":"x"}"#).is_err());
    }
}
