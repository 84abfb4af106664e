//! `dev:` of berth.yaml: what `berth dev` adds to render, apply and sync —
//! port-forwards from this machine to the pods of a component.

use berth_yaml::{Node, Pos};

use super::{Loader, ProjectError};

pub(super) const DEV_KEYS: &[&str] = &["forward"];
pub(super) const FORWARD_KEYS: &[&str] = &["component", "port", "local"];

/// `dev:`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dev {
    /// `dev.forward`: one local port each, to a ready pod of a component.
    pub forward: Vec<Forward>,
}

/// One `dev.forward` entry: `127.0.0.1:local` reaches `port` of a ready pod that
/// runs `component`'s image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    /// The component whose pods serve it.
    pub component: String,
    /// The port in the pod.
    pub port: u16,
    /// The port on 127.0.0.1 (default: `port`).
    pub local: u16,
    /// Where the entry is written.
    pub pos: Pos,
}

impl Loader<'_> {
    pub(super) fn dev(&self, node: &Node, components: &[String]) -> Result<Dev, ProjectError> {
        let mut dev = Dev::default();
        if node.is_null() {
            return Ok(dev);
        }
        for (key, value) in self.fields(node, "dev", DEV_KEYS)? {
            if key.as_str() == Some("forward") {
                for item in self.list(
                    value,
                    "dev.forward",
                    "a list of {component, port, local} entries",
                )? {
                    let forward = self.forward(item, components)?;
                    if dev.forward.iter().any(|f| f.local == forward.local) {
                        return Err(ProjectError::InvalidValue {
                            file: self.file.to_string(),
                            pos: item.pos,
                            key: "dev.forward[].local".into(),
                            value: forward.local.to_string(),
                            reason: "an earlier forward already listens on this local port; give each its own `local:`",
                        });
                    }
                    dev.forward.push(forward);
                }
            }
        }
        Ok(dev)
    }

    fn forward(&self, node: &Node, components: &[String]) -> Result<Forward, ProjectError> {
        let (mut component, mut port, mut local) = (None, None, None);
        for (k, v) in self.fields(node, "dev.forward[]", FORWARD_KEYS)? {
            match k.as_str().unwrap_or_default() {
                "component" => {
                    let name = self.string(v, "dev.forward[].component")?;
                    self.known_component(name, v.pos, "dev.forward[].component", components)?;
                    component = Some(name.to_string());
                }
                "port" => port = Some(self.port(v, "dev.forward[].port")?),
                "local" => local = Some(self.port(v, "dev.forward[].local")?),
                _ => {}
            }
        }
        let missing = |key| self.missing(node.pos, key, "a dev.forward entry");
        let component = component.ok_or_else(|| missing("component"))?;
        let port = port.ok_or_else(|| missing("port"))?;
        Ok(Forward {
            component,
            port,
            local: local.unwrap_or(port),
            pos: node.pos,
        })
    }

    /// A TCP port, 1 to 65535, written as a plain number.
    fn port(&self, node: &Node, key: &str) -> Result<u16, ProjectError> {
        let text = node
            .as_scalar()
            .filter(|s| s.style == berth_yaml::Style::Plain)
            .map(|s| s.text.as_str())
            .ok_or_else(|| self.wrong(node, key, "a port number (1 to 65535)"))?;
        match text.parse::<u16>() {
            Ok(port) if port > 0 => Ok(port),
            _ => Err(self.invalid(
                node,
                key,
                text,
                "a TCP port is a whole number from 1 to 65535",
            )),
        }
    }
}
