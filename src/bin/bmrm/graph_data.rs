//! The graph text format of `bmrm train --graph` (docs/cli.md): its reader,
//! which names the file and line of malformed input and bounds what it
//! allocates by what it has read (and lines by 1 MiB).
//!
//! ```text
//! bmrm-graph 1 examples=2 node-features=2 edges=potts edge-features=1 loss=hamming
//! # a comment; blank lines are skipped
//! example 3 2        # 3 nodes, 2 edges
//! 2 0 0.5 -0.1       # a node: states, true state, node-features numbers
//! 2 1 0.3 0.2
//! 2 1 0.1 0.1
//! 0 1 1.0            # an edge: u v (0-based within the example), edge-features numbers
//! 1 2 0.5
//! example 2 1
//! ...
//! ```
//!
//! The header line is the magic `bmrm-graph 1` and `key=value` pairs:
//! `examples` (required), `node-features` (0), `edges` (`constant`,
//! `dense` or `potts`; `constant`), `edge-features` (0; constant edges have
//! none), `loss` (`hamming` or `normalised-hamming`). Unknown keys are
//! errors. Every node has the same number of states (one node type).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use bmrm::models::graph::{EdgeFeatures, GraphExamples, GraphLoss, NodeFeatures};

/// The longest line the reader accepts (bytes).
const MAX_LINE: u64 = 1 << 20;
/// The most offsets preallocated from a count the file states.
const MAX_RESERVE: usize = 1 << 16;

/// The kinds and counts of a graph file's header (also stored in the model
/// file: the data predicted must have the same).
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub examples: usize,
    pub node_dim: usize,
    pub edges: String,
    pub edge_dim: usize,
    pub loss: String,
}

/// A graph file read: its header, the examples, and the nodes' common
/// state count.
pub struct GraphFile {
    pub header: Header,
    pub examples: GraphExamples,
    pub states: u32,
}

/// A line reader that bounds the line length and counts lines.
struct Lines<R> {
    inner: R,
    name: String,
    no: usize,
    buf: Vec<u8>,
}

impl<R: BufRead> Lines<R> {
    fn at(&self, msg: impl std::fmt::Display) -> String {
        format!("{}:{}: {msg}", self.name, self.no)
    }
    /// The next line that is not blank once its `#` comment is removed.
    fn next(&mut self) -> Result<Option<String>, String> {
        loop {
            self.buf.clear();
            self.no += 1;
            let n = (&mut self.inner)
                .take(MAX_LINE + 1)
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| self.at(format!("cannot read: {e}")))?;
            if n == 0 {
                return Ok(None);
            }
            if n as u64 > MAX_LINE {
                return Err(self.at(format!("a line longer than {MAX_LINE} bytes")));
            }
            let text = std::str::from_utf8(&self.buf).map_err(|_| self.at("not UTF-8 text"))?;
            let text = text.split('#').next().unwrap_or("").trim();
            if !text.is_empty() {
                return Ok(Some(text.to_string()));
            }
        }
    }
}

fn parse<T: std::str::FromStr>(tok: &str, what: &str) -> Result<T, String> {
    tok.parse().map_err(|_| {
        format!(
            "{what} `{tok}` is not a valid {}",
            std::any::type_name::<T>()
        )
    })
}

pub fn parse_header(line: &str) -> Result<Header, String> {
    let mut toks = line.split_whitespace();
    if toks.next() != Some("bmrm-graph") || toks.next() != Some("1") {
        return Err("not a graph file: the first line must start with `bmrm-graph 1`".into());
    }
    let mut h = Header {
        examples: 0,
        node_dim: 0,
        edges: "constant".into(),
        edge_dim: 0,
        loss: "hamming".into(),
    };
    let mut seen = Vec::new();
    for t in toks {
        let (k, v) = t
            .split_once('=')
            .ok_or_else(|| format!("header: `{t}` is not key=value"))?;
        if seen.contains(&k) {
            return Err(format!("header: `{k}` given twice"));
        }
        seen.push(k);
        match k {
            "examples" => h.examples = parse(v, "examples")?,
            "node-features" => h.node_dim = parse(v, "node-features")?,
            "edge-features" => h.edge_dim = parse(v, "edge-features")?,
            "edges" if ["constant", "dense", "potts"].contains(&v) => h.edges = v.into(),
            "edges" => return Err(format!("header: edges={v}: not constant, dense or potts")),
            "loss" if ["hamming", "normalised-hamming"].contains(&v) => h.loss = v.into(),
            "loss" => {
                return Err(format!(
                    "header: loss={v}: not hamming or normalised-hamming"
                ))
            }
            _ => return Err(format!("header: unknown key `{k}`")),
        }
    }
    if h.examples == 0 {
        return Err("header: examples=M (M >= 1) is required".into());
    }
    if h.edges == "constant" && h.edge_dim != 0 {
        return Err(format!(
            "header: edge-features={} but constant edges have no features",
            h.edge_dim
        ));
    }
    Ok(h)
}

/// `count` numbers from `toks`, exactly.
fn numbers<'a>(
    toks: impl Iterator<Item = &'a str>,
    count: usize,
    what: &str,
    out: &mut Vec<f32>,
) -> Result<(), String> {
    let before = out.len();
    for t in toks {
        let v: f32 = parse(t, what)?;
        if !v.is_finite() {
            return Err(format!("{what} `{t}` is not finite"));
        }
        if out.len() - before == count {
            return Err(format!("more than {count} {what}s"));
        }
        out.push(v);
    }
    if out.len() - before != count {
        return Err(format!("{} {what}s, expected {count}", out.len() - before));
    }
    Ok(())
}

/// Reads a graph file (at most `limit` examples).
pub fn read(path: &Path, limit: Option<usize>) -> Result<GraphFile, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("graph file {}: cannot open: {e}", path.display()))?;
    let mut r = Lines {
        inner: BufReader::new(file),
        name: path.display().to_string(),
        no: 0,
        buf: Vec::new(),
    };
    let first = r.next()?.ok_or_else(|| r.at("the file is empty"))?;
    let header = parse_header(&first).map_err(|e| r.at(e))?;
    let m = limit.map_or(header.examples, |l| l.min(header.examples));
    let (d, f) = (header.node_dim, header.edge_dim);
    let mut node_start = Vec::with_capacity(m.min(MAX_RESERVE) + 1);
    let mut edge_start = Vec::with_capacity(m.min(MAX_RESERVE) + 1);
    let (mut states, mut labels, mut x) = (Vec::new(), Vec::new(), Vec::new());
    let (mut edges, mut ex) = (Vec::new(), Vec::new());
    node_start.push(0);
    edge_start.push(0);
    let mut common: Option<(u32, usize)> = None;
    for i in 0..m {
        let line = r
            .next()?
            .ok_or_else(|| r.at(format!("the file ends before example {i} (of {m})")))?;
        let t: Vec<&str> = line.split_whitespace().collect();
        let (n, e) = match t.as_slice() {
            ["example", n, e] => (
                parse::<usize>(n, "the node count").map_err(|s| r.at(s))?,
                parse::<usize>(e, "the edge count").map_err(|s| r.at(s))?,
            ),
            _ => {
                return Err(r.at(format!(
                    "expected `example NODES EDGES` (example {i}), got `{line}`"
                )))
            }
        };
        if n == 0 {
            return Err(r.at(format!("example {i} has no nodes")));
        }
        for node in 0..n {
            let where_ = format!("example {i}, node {node}");
            let line = r
                .next()?
                .ok_or_else(|| r.at(format!("the file ends in {where_} (of {n} nodes)")))?;
            let mut toks = line.split_whitespace();
            let mut field = |what: &str| -> Result<u32, String> {
                let tok = toks.next().ok_or_else(|| format!("{where_}: no {what}"))?;
                parse(tok, &format!("{where_}: the {what}"))
            };
            let (s, y) = (
                field("state count").map_err(|e| r.at(e))?,
                field("true state").map_err(|e| r.at(e))?,
            );
            match common {
                None => common = Some((s, r.no)),
                Some((c, first)) if c != s => {
                    return Err(r.at(format!(
                        "{where_}: {s} states, but line {first} has {c} (every node has the same count)"
                    )))
                }
                _ => {}
            }
            numbers(toks, d, "node feature", &mut x).map_err(|e| r.at(format!("{where_}: {e}")))?;
            states.push(s);
            labels.push(y);
        }
        for edge in 0..e {
            let where_ = format!("example {i}, edge {edge}");
            let line = r
                .next()?
                .ok_or_else(|| r.at(format!("the file ends in {where_} (of {e} edges)")))?;
            let mut toks = line.split_whitespace();
            let mut end = |what: &str| -> Result<u32, String> {
                let tok = toks.next().ok_or_else(|| format!("{where_}: no {what}"))?;
                parse(tok, &format!("{where_}: the {what}"))
            };
            let (u, v) = (
                end("first node").map_err(|s| r.at(s))?,
                end("second node").map_err(|s| r.at(s))?,
            );
            for (k, &node) in [u, v].iter().enumerate() {
                if node as usize >= n {
                    return Err(r.at(format!(
                        "{where_}: node {node} ({}) is not in the example's {n} nodes",
                        ["u", "v"][k]
                    )));
                }
            }
            numbers(toks, f, "edge feature", &mut ex)
                .map_err(|s| r.at(format!("{where_}: {s}")))?;
            edges.push([u, v]);
        }
        node_start.push(states.len());
        edge_start.push(edges.len());
    }
    if limit.is_none() {
        if let Some(line) = r.next()? {
            return Err(r.at(format!("data after the {m} examples: `{line}`")));
        }
    }
    let edge_features = match header.edges.as_str() {
        "constant" => EdgeFeatures::Constant,
        "dense" => EdgeFeatures::Dense {
            values: ex,
            f,
            symmetric: vec![],
            antisymmetric: vec![],
        },
        _ => EdgeFeatures::Potts { values: ex, f },
    };
    let examples = GraphExamples {
        node_start,
        states,
        labels,
        node_types: vec![],
        node_features: NodeFeatures::Dense { values: x, d },
        edge_start,
        edges,
        edge_types: vec![],
        edge_features,
        loss: GraphLoss::Hamming {
            class_weight: vec![],
            normalise: header.loss == "normalised-hamming",
        },
    };
    let states = common.map_or(0, |c| c.0);
    Ok(GraphFile {
        header,
        examples,
        states,
    })
}
