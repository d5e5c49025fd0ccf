//! A cap on how much of an API server answer nrl holds in memory.
//!
//! kube-rs buffers every non-streaming answer whole (`Client::request_text`) and splits
//! watch streams into lines without a length limit (`LinesCodec::new()`), so a server or
//! proxy sending an endless body grows nrl until the machine runs out of memory. This
//! tower layer sits outermost in the client's stack (after decompression, so a gzip bomb
//! is counted as it inflates) and ends the body with [`ResponseTooLarge`] once it passes
//! the limit:
//!
//! - gets, lists, applies, deletes, discovery, a log without `follow`: at most
//!   [`BodyLimits::response`] bytes in all; a larger `Content-Length` fails before reading;
//! - watches (`watch=true`): endless by design, but one event (one line) at most
//!   [`BodyLimits::watch_line`] bytes;
//! - followed logs (`follow=true`), exec, attach and port-forward: not limited (streamed
//!   to the terminal, never buffered whole), except an error answer, which kube-rs reads
//!   whole to parse its `Status`.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Request, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
use tower::{BoxError, Layer, Service};

/// Largest non-streaming answer (64 MiB). etcd stores at most about 1.5 MiB per object
/// (its default `--max-request-bytes`), so only a list of thousands of large objects comes
/// near it.
pub const MAX_RESPONSE_BYTES: u64 = 64 << 20;

/// Largest single watch event (64 MiB): one object, bounded by the same limits.
pub const MAX_WATCH_LINE_BYTES: u64 = 64 << 20;

/// The limits the layer enforces; [`Default`] gives the constants above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimits {
    /// Whole body of a non-streaming answer, and of any error answer.
    pub response: u64,
    /// One line of a watch stream.
    pub watch_line: u64,
}

impl Default for BodyLimits {
    fn default() -> Self {
        BodyLimits {
            response: MAX_RESPONSE_BYTES,
            watch_line: MAX_WATCH_LINE_BYTES,
        }
    }
}

/// The body went past a limit; kube-rs surfaces it as `kube::Error::Service` (or inside
/// the `io::Error` of a watch), see [`find`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct ResponseTooLarge {
    /// The request path (no query), for the message.
    pub path: String,
    pub limit: u64,
    /// The `Content-Length` the server declared, when that alone was over the limit.
    pub declared: Option<u64>,
    /// A watch event (one line) was over the limit, not the whole body.
    pub watch_event: bool,
}

impl ResponseTooLarge {
    fn describe(&self) -> String {
        let limit = crate::diag::human_bytes(self.limit);
        let path = &self.path;
        match (self.declared, self.watch_event) {
            (_, true) => {
                format!("the API server sent a watch event over {limit} (no line end) for {path}")
            }
            (Some(n), false) => {
                format!("the API server announced a {n}-byte answer for {path}, over {limit}")
            }
            (None, false) => format!("the API server sent more than {limit} for {path}"),
        }
    }
}

/// The [`ResponseTooLarge`] somewhere in `e`'s source chain. `io::Error` hides its
/// payload from `source()` (it returns the payload's source), so it is opened by hand.
pub fn find<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a ResponseTooLarge> {
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(hit) = err.downcast_ref::<ResponseTooLarge>() {
            return Some(hit);
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && let Some(inner) = io.get_ref()
            && let Some(hit) = find(inner)
        {
            return Some(hit);
        }
        current = err.source();
    }
    None
}

/// What a request's answer may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// At most this many bytes in all.
    Total(u64),
    /// Endless, lines of at most this many bytes.
    Lines(u64),
    /// Streamed to the user: no limit.
    Unlimited,
}

fn mode_for(limits: BodyLimits, path: &str, query: &str, status: StatusCode) -> Mode {
    if status == StatusCode::SWITCHING_PROTOCOLS {
        return Mode::Unlimited;
    }
    // kube-rs reads every error answer whole (`handle_api_errors`), streaming or not.
    if status.is_client_error() || status.is_server_error() {
        return Mode::Total(limits.response);
    }
    let flag = |key: &str| {
        query.split('&').any(|pair| match pair.split_once('=') {
            Some((k, v)) => k == key && (v == "true" || v == "1"),
            None => false,
        })
    };
    let upgrade = ["/exec", "/attach", "/portforward"]
        .iter()
        .any(|s| path.ends_with(s));
    if upgrade || (path.ends_with("/log") && flag("follow")) {
        Mode::Unlimited
    } else if flag("watch") {
        Mode::Lines(limits.watch_line)
    } else {
        Mode::Total(limits.response)
    }
}

/// Tower layer applying [`BodyLimits`] (add with `ClientBuilder::with_layer`).
#[derive(Debug, Clone, Copy, Default)]
pub struct BodyLimitLayer {
    pub limits: BodyLimits,
}

impl<S> Layer<S> for BodyLimitLayer {
    type Service = BodyLimitService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        BodyLimitService {
            inner,
            limits: self.limits,
        }
    }
}

#[derive(Debug, Clone)]
pub struct BodyLimitService<S> {
    inner: S,
    limits: BodyLimits,
}

impl<S, ReqBody, B> Service<Request<ReqBody>> for BodyLimitService<S>
where
    S: Service<Request<ReqBody>, Response = Response<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Response = Response<LimitedBody<B>>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let path = request.uri().path().to_string();
        let query = request.uri().query().unwrap_or("").to_string();
        let limits = self.limits;
        let future = self.inner.call(request);
        Box::pin(async move {
            let response = future.await.map_err(Into::into)?;
            let mode = mode_for(limits, &path, &query, response.status());
            if let Mode::Total(limit) = mode
                && let Some(declared) = declared_length(&response).filter(|n| *n > limit)
            {
                return Err(Box::new(ResponseTooLarge {
                    path,
                    limit,
                    declared: Some(declared),
                    watch_event: false,
                }) as BoxError);
            }
            Ok(response.map(|inner| LimitedBody {
                inner,
                mode,
                seen: 0,
                path,
                failed: false,
            }))
        })
    }
}

fn declared_length<B>(response: &Response<B>) -> Option<u64> {
    response
        .headers()
        .get(http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// A response body that fails with [`ResponseTooLarge`] past its limit.
pub struct LimitedBody<B> {
    inner: B,
    mode: Mode,
    /// Bytes so far (`Total`) or since the last line end (`Lines`).
    seen: u64,
    path: String,
    failed: bool,
}

impl<B> LimitedBody<B> {
    /// Count `data`; the error once a limit is passed.
    fn count(&mut self, data: &[u8]) -> Option<ResponseTooLarge> {
        let len = data.len() as u64;
        let (limit, watch_event) = match self.mode {
            Mode::Unlimited => return None,
            Mode::Total(limit) => {
                self.seen = self.seen.saturating_add(len);
                (limit, false)
            }
            Mode::Lines(limit) => {
                self.seen = match data.iter().rposition(|b| *b == b'\n') {
                    Some(i) => (data.len() - i - 1) as u64,
                    None => self.seen.saturating_add(len),
                };
                (limit, true)
            }
        };
        (self.seen > limit).then(|| ResponseTooLarge {
            path: self.path.clone(),
            limit,
            declared: None,
            watch_event,
        })
    }
}

impl<B> Body for LimitedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if this.failed {
            return Poll::Ready(None);
        }
        match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            Some(Ok(frame)) => {
                if let Some(too_large) = frame.data_ref().and_then(|d| this.count(d)) {
                    // Stop here; dropping the body closes the connection.
                    this.failed = true;
                    return Poll::Ready(Some(Err(Box::new(too_large))));
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Some(Err(e)) => Poll::Ready(Some(Err(e.into()))),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.failed || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: BodyLimits = BodyLimits {
        response: 100,
        watch_line: 10,
    };

    #[test]
    fn streams_are_told_apart_by_path_and_query() {
        let ok = StatusCode::OK;
        let mode = |path: &str, query: &str| mode_for(LIMITS, path, query, ok);
        assert_eq!(mode("/api/v1/namespaces/d/pods", ""), Mode::Total(100));
        assert_eq!(
            mode("/api/v1/namespaces/d/pods", "watch=true&timeoutSeconds=60"),
            Mode::Lines(10)
        );
        assert_eq!(
            mode("/api/v1/namespaces/d/pods", "watch=false"),
            Mode::Total(100)
        );
        assert_eq!(
            mode("/api/v1/namespaces/d/pods/p/log", ""),
            Mode::Total(100)
        );
        assert_eq!(
            mode("/api/v1/namespaces/d/pods/p/log", "container=c&follow=true"),
            Mode::Unlimited
        );
        assert_eq!(
            mode("/api/v1/namespaces/d/pods/p/exec", "command=sh"),
            Mode::Unlimited
        );
        assert_eq!(
            mode("/api/v1/namespaces/d/pods/p/portforward", "ports=1"),
            Mode::Unlimited
        );
        // A refused stream still has its Status body read whole.
        assert_eq!(
            mode_for(
                LIMITS,
                "/api/v1/namespaces/d/pods/p/log",
                "follow=true",
                StatusCode::FORBIDDEN
            ),
            Mode::Total(100)
        );
    }

    fn body(mode: Mode) -> LimitedBody<String> {
        LimitedBody {
            inner: String::new(),
            mode,
            seen: 0,
            path: "/p".into(),
            failed: false,
        }
    }

    #[test]
    fn totals_count_every_byte_and_lines_restart_at_each_newline() {
        let mut total = body(Mode::Total(100));
        assert!(total.count(&[b'a'; 60]).is_none());
        let err = total.count(&[b'a'; 60]).unwrap();
        assert_eq!((err.limit, err.watch_event), (100, false));

        let mut lines = body(Mode::Lines(10));
        for _ in 0..100 {
            assert!(lines.count(b"{\"a\":1}\n{\"b\"").is_none());
            assert!(lines.count(b":2}\n").is_none());
        }
        assert!(lines.count(b"123456").is_none());
        let err = lines.count(b"789012").unwrap();
        assert!(err.watch_event);
        assert!(body(Mode::Unlimited).count(&[0; 1000]).is_none());
    }

    #[test]
    fn the_error_is_found_inside_kube_and_io_errors() {
        let too_large = ResponseTooLarge {
            path: "/api/v1/pods".into(),
            limit: 64 << 20,
            declared: None,
            watch_event: false,
        };
        let service = kube::Error::Service(Box::new(too_large.clone()));
        assert_eq!(find(&service), Some(&too_large));
        let watch = kube::Error::ReadEvents(std::io::Error::other(kube::Error::Service(Box::new(
            too_large.clone(),
        ))));
        assert_eq!(find(&watch), Some(&too_large));
        assert_eq!(
            too_large.to_string(),
            "the API server sent more than 64 MiB for /api/v1/pods"
        );
        assert!(find(&kube::Error::LinesCodecMaxLineLengthExceeded).is_none());
    }
}
