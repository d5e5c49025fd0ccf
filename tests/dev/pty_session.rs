//! An interactive session: `nrl dev connect` driven through a pseudo-terminal.
